"""Tests and assertions counted per language, and those that left test code: net counts over
the whole change (pure).

The counters read a text's lines with line comments cut off: a commented-out test or
assertion does not count.

A test's name is what ties it to its old self: a test moved to another file, or a file moved
whole, leaves every name in some new text and costs nothing. A renamed test changes no
count, so ``test_removed`` (a count) stays quiet while the deleted/emptied detectors, which
ask whether a file's tests went anywhere, look only at files that lost all of them.
"""

from __future__ import annotations

from collections import Counter

from pipeline.core.screening._classify import Image, Pair
from pipeline.core.screening._languages import SYNTAX
from pipeline.core.screening._lines import code, listed, markers, plural
from pipeline.core.screening._model import (
    ChangeStatus,
    Language,
    ScreenHit,
    ScreenKind,
    TestItem,
    file_hit,
)

__all__ = ["count_assertions", "count_items", "lost_tests"]


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
    ``assertions_removed`` hits for the change."""
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
