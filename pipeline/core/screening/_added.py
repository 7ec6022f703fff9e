"""Markers added to a change: skips, tautologies, forced exits, filters, TODOs (pure).

A detector finds marker lines in every old and every new image it reads. It hits only when
the new images hold more markers than the old ones, so a marker moved within a file or to
another changes nothing; it then names the new lines whose text has more copies than before,
those in files where that text grew first.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from pipeline.core.screening._counters import find_exits, find_filters, find_skips, find_tautologies
from pipeline.core.screening._images import Image, Pair
from pipeline.core.screening._model import Language, Marker, ScreenHit, ScreenKind
from pipeline.core.screening._shapes import (
    find_exit_hooks,
    find_rebindings,
    find_runner_checks,
    find_same_or_true,
)
from pipeline.events.values import Count

__all__ = [
    "added_markers",
    "config_filters",
    "exits",
    "rebindings",
    "runner_checks",
    "skips",
    "tautologies",
]

Finder = Callable[[Image], tuple[Marker, ...]]
"""Reads one image's marker lines (empty when the detector does not read that image)."""


def _key(marker: Marker) -> str:
    return " ".join(marker.text.split())


def added_markers(kind: ScreenKind, pairs: tuple[Pair, ...], find: Finder) -> list[ScreenHit]:
    """Hits of ``kind`` for the marker lines the new images add, as a net count."""
    old = [find(p.old) if p.old is not None else () for p in pairs]
    new = [find(p.new) if p.new is not None else () for p in pairs]
    if sum(m.count for ms in new for m in ms) <= sum(m.count for ms in old for m in ms):
        return []
    old_weight: Counter[str] = Counter()
    for markers in old:
        for m in markers:
            old_weight[_key(m)] += m.count
    candidates: dict[str, list[tuple[bool, str, Marker]]] = {}
    new_weight: Counter[str] = Counter()
    for index, markers in enumerate(new):
        here_before: Counter[str] = Counter()
        for m in old[index]:
            here_before[_key(m)] += m.count
        here_now: Counter[str] = Counter()
        for m in markers:
            here_now[_key(m)] += m.count
        for m in markers:
            key = _key(m)
            new_weight[key] += m.count
            grew = here_now[key] > here_before[key]
            candidates.setdefault(key, []).append((not grew, pairs[index].change.path, m))
    hits = []
    for key, found in candidates.items():
        excess = new_weight[key] - old_weight[key]
        for _, path, m in sorted(found, key=lambda c: (c[0], c[1], c[2].line)):
            if excess <= 0:
                break
            hits.append(ScreenHit(kind=kind, path=path, line=Count(m.line), detail=m.text))
            excess -= m.count
    return hits


def skips(image: Image) -> tuple[Marker, ...]:
    """Skip and focus markers of a test image."""
    if not image.test_code or image.language is None:
        return ()
    return find_skips(image.language, image.text)


def _merged(*found: tuple[Marker, ...]) -> tuple[Marker, ...]:
    """Markers of several finders, one per line (the first finder's when two find a line)."""
    by_line: dict[int, Marker] = {}
    for markers in found:
        for marker in markers:
            by_line.setdefault(marker.line, marker)
    return tuple(by_line[line] for line in sorted(by_line))


def tautologies(image: Image) -> tuple[Marker, ...]:
    """Assertions true whatever the code does in a test image: a constant truth
    (``assert True``), an ``or True``, an expression compared with itself."""
    if not image.test_code or image.language is None:
        return ()
    return _merged(
        find_tautologies(image.language, image.text),
        find_same_or_true(image.language, image.text),
    )


def exits(image: Image) -> tuple[Marker, ...]:
    """Forced exits in test code or a test runner's configuration, and hard or registered
    exits (``os._exit(``, ``atexit.register(os._exit, 0)``) in any Python code: the tests
    import code, and a session that ends there ends with the status it chose."""
    if image.test_code or image.runner_config:
        hooks = () if image.language is None else find_exit_hooks(image.language, image.text)
        return _merged(find_exits(image.language, image.text), hooks)
    if image.language is None:
        return ()
    return find_exit_hooks(image.language, image.text)


def runner_checks(image: Image) -> tuple[Marker, ...]:
    """Code under test asking whether a test runner runs it (``"pytest" in sys.modules``).

    Test code and runner configuration are left out (a conftest may well ask), except in
    Rust, whose tests live in the files of the code."""
    if image.language is None or image.runner_config:
        return ()
    if image.test_code and image.language is not Language.RUST:
        return ()
    return find_runner_checks(image.language, image.text)


def rebindings(image: Image) -> tuple[Marker, ...]:
    """Module-level rebinding of an imported name in a Python test file or conftest."""
    if image.language is not Language.PYTHON:
        return ()
    if not (image.test_code or image.path.rsplit("/", 1)[-1] == "conftest.py"):
        return ()
    return find_rebindings(image.text)


def config_filters(image: Image) -> tuple[Marker, ...]:
    """Lines of a runner's configuration that deselect, ignore or filter tests."""
    if not image.runner_config:
        return ()
    return find_filters(image.path, image.text)
