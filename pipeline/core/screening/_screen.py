"""The screen: every detector over one change set, hits in one deterministic order (pure).

``screen`` is total: it reads any text, binary-looking or with huge lines, in time linear in
its input (see :mod:`pipeline.core.screening._lines`), and never raises.

The counters of tests and assertions per language live here too. They read a text's lines
with line comments cut off: a commented-out test or assertion does not count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Final

from pipeline.core.screening._added import (
    added_markers,
    config_filters,
    exits,
    find_todos,
    rebindings,
    runner_checks,
    skips,
    tautologies,
)
from pipeline.core.screening._classify import (
    CI_PATTERNS,
    RUN_CONFIGURATION,
    Image,
    Pair,
    is_markdown,
    matches_any,
    pairs,
)
from pipeline.core.screening._languages import SYNTAX
from pipeline.core.screening._lines import code, listed, markers, plural
from pipeline.core.screening._model import (
    ChangeStatus,
    FileChange,
    Language,
    Marker,
    Protection,
    ScreenHit,
    ScreenKind,
    ScreenRules,
    TestItem,
    file_hit,
)

__all__ = ["count_assertions", "count_items", "screen"]


def count_items(language: Language, text: str) -> tuple[TestItem, ...]:
    """The tests ``text`` declares, in order (Python ``def test_*``, ``it(``/``test(``...)."""
    syntax = SYNTAX[language]
    items = []
    pending = False
    for number, line in code(language, text):
        if syntax.item is not None:
            match = syntax.item.search(line)
            if match:
                items.append(TestItem(name=match["name"] or f"<line {number}>", line=number))
            continue
        rest = line
        attribute = syntax.attribute.search(line) if syntax.attribute else None
        if attribute:
            pending = True
            rest = line[attribute.end() :]
        stripped = rest.strip()
        if not pending or not stripped or (stripped.startswith(("@", "#[")) and not attribute):
            continue
        declared = syntax.declaration.search(rest) if syntax.declaration else None
        if declared:
            pending = False
            name = next(g for g in declared.groups() if g is not None)
            items.append(TestItem(name=name, line=number))
        elif not attribute:
            pending = False
    return tuple(items)


def count_assertions(language: Language, text: str) -> int:
    """How many assertions ``text`` makes (``assert``, ``expect(``, ``t.Error``...)."""
    return sum(m.count for m in markers(code(language, text), SYNTAX[language].assertions))


def _items(image: Image | None) -> tuple[TestItem, ...]:
    if image is None or not image.test_code or image.language is None:
        return ()
    return count_items(image.language, image.text)


def _assertions(image: Image | None) -> int:
    if image is None or not image.test_code or image.language is None:
        return 0
    return count_assertions(image.language, image.text)


def _gone_by_pair(
    pairs: tuple[Pair, ...], old: list[tuple[TestItem, ...]], new: list[tuple[TestItem, ...]]
) -> list[list[str]]:
    """Each pair's old test names that no new text declares (as a multiset, in order)."""
    gone = Counter(i.name for items in old for i in items) - Counter(
        i.name for items in new for i in items
    )
    found: list[list[str]] = [[] for _ in pairs]
    for index, items in enumerate(old):
        for item in items:
            if gone[item.name] > 0:
                gone[item.name] -= 1
                found[index].append(item.name)
    return found


def _whole_file(pair: Pair, before: int, gone: list[str]) -> ScreenHit | None:
    change = pair.change
    if not gone:
        return None
    shown = listed(gone)
    if change.status is ChangeStatus.DELETED:
        detail = f"deleted (tests gone: {shown})"
        return file_hit(ScreenKind.TEST_FILE_DELETED, change.before, detail)
    if change.status is ChangeStatus.RENAMED and pair.new is not None and not pair.new.test_code:
        detail = f"renamed to {change.path}, not test code (tests gone: {shown})"
        return file_hit(ScreenKind.TEST_FILE_DELETED, change.before, detail)
    detail = f"{plural(before, 'test')} before, none now (tests gone: {shown})"
    return file_hit(ScreenKind.TEST_FILE_EMPTIED, change.path, detail)


def lost_tests(pairs: tuple[Pair, ...]) -> list[ScreenHit]:
    """``test_file_deleted``, ``test_file_emptied``, ``test_removed`` and
    ``assertions_removed`` hits for the change, from net counts over the whole change.

    A test's name is what ties it to its old self: a test moved to another file, or a file
    moved whole, leaves every name in some new text and costs nothing. A renamed test changes
    no count, so ``test_removed`` (a count) stays quiet while the deleted/emptied detectors,
    which ask whether a file's tests went anywhere, look only at files that lost all of them.
    """
    old = [_items(p.old) for p in pairs]
    new = [_items(p.new) for p in pairs]
    gone = _gone_by_pair(pairs, old, new)
    hits: list[ScreenHit] = []
    whole: set[int] = set()
    for index, pair in enumerate(pairs):
        if old[index] and not new[index]:
            hit = _whole_file(pair, len(old[index]), gone[index])
            if hit is not None:
                hits.append(hit)
                whole.add(index)
    fewer = sum(map(len, old)) - sum(map(len, new))
    if fewer > 0:
        for index, pair in enumerate(pairs):
            if gone[index] and index not in whole:
                detail = f"{plural(fewer, 'fewer test')} in all; gone here: {listed(gone[index])}"
                hits.append(file_hit(ScreenKind.TEST_REMOVED, pair.change.path, detail))
    asserted = [(_assertions(p.old), _assertions(p.new)) for p in pairs]
    dropped = sum(a for a, _ in asserted) - sum(b for _, b in asserted)
    if dropped > 0:
        for index, pair in enumerate(pairs):
            before, after = asserted[index]
            if before > after and index not in whole:
                detail = f"{before} -> {plural(after, 'assertion')} ({dropped} fewer in all)"
                hits.append(file_hit(ScreenKind.ASSERTIONS_REMOVED, pair.change.path, detail))
    return hits


_ORDER = {kind: index for index, kind in enumerate(ScreenKind)}


def _allowed(change: FileChange, rules: ScreenRules) -> bool:
    return matches_any(change.path, rules.allow) and matches_any(change.before, rules.allow)


_BUILT_IN: Final = (
    Protection(pattern=f"/{RUN_CONFIGURATION}", reason="the run's configuration"),
    *(Protection(pattern=pattern, reason="a CI file") for pattern in CI_PATTERNS),
)
"""What no change may touch whatever ``[tamper]`` says; ``rules.protect`` adds to it."""


def _protection(path: str, rules: ScreenRules) -> str | None:
    found = (p for p in (*_BUILT_IN, *rules.protect) if matches_any(path, (p.pattern,)))
    return next((p.reason for p in found), None)


def _protected(pair: Pair, rules: ScreenRules) -> ScreenHit | None:
    change = pair.change
    if change.status is ChangeStatus.MODIFIED and change.old_text == change.new_text:
        return None
    for path in dict.fromkeys((change.before, change.path)):
        reason = _protection(path, rules)
        if reason is None:
            continue
        if change.status is ChangeStatus.RENAMED:
            verb = f"renamed to {change.path}" if path == change.before else "renamed here"
        else:
            verb = change.status.value
        return file_hit(ScreenKind.PROTECTED_CHANGED, path, f"{verb} ({reason})")
    return None


def _todos(pair: Pair, markers: tuple[str, ...]) -> list[ScreenHit]:
    if pair.new is None or is_markdown(pair.new.path):
        return []

    def find(image: Image) -> tuple[Marker, ...]:
        return find_todos(image.text, markers)

    return added_markers(ScreenKind.TODO_ADDED, (pair,), find)


def _order(hit: ScreenHit) -> tuple[int, str, int, str]:
    return (_ORDER[hit.kind], hit.path, hit.line, hit.detail)


def screen(changes: Iterable[FileChange], rules: ScreenRules) -> tuple[ScreenHit, ...]:
    """Every hit the change set gives under ``rules``, sorted by kind, path, line and detail.

    Paths matching ``rules.allow`` (both sides of a rename) are left out first: changes
    there are never hits.
    """
    paired = pairs((c for c in changes if not _allowed(c, rules)), rules.test_paths)
    hits: list[ScreenHit] = []
    if rules.tamper:
        hits.extend(h for p in paired if (h := _protected(p, rules)) is not None)
        hits.extend(lost_tests(paired))
        hits.extend(added_markers(ScreenKind.TAUTOLOGY_ADDED, paired, tautologies))
        hits.extend(added_markers(ScreenKind.EXIT_FORCED, paired, exits))
        hits.extend(added_markers(ScreenKind.TEST_CONFIG_CHANGED, paired, config_filters))
        hits.extend(added_markers(ScreenKind.RUNNER_DETECTED, paired, runner_checks))
        hits.extend(added_markers(ScreenKind.NAME_REBOUND, paired, rebindings))
    if rules.tamper or rules.no_skipped_tests:
        hits.extend(added_markers(ScreenKind.SKIP_ADDED, paired, skips))
    if rules.todo_markers:
        for pair in paired:
            hits.extend(_todos(pair, rules.todo_markers))
    return tuple(sorted(set(hits), key=_order))
