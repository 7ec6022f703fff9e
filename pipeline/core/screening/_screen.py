"""The screen: every detector over one change set, hits in one deterministic order (pure).

``screen`` is total: it reads any text, binary-looking or with huge lines, in time linear in
its input (see :mod:`pipeline.core.screening._lines`), and never raises.
"""

from __future__ import annotations

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
from pipeline.core.screening._lost import lost_tests
from pipeline.core.screening._model import (
    ChangeStatus,
    FileChange,
    Marker,
    Protection,
    ScreenHit,
    ScreenKind,
    ScreenRules,
    file_hit,
)

__all__ = ["screen"]

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
