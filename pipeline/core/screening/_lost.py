"""Tests and assertions that left test code: net counts over the whole change (pure).

A test's name is what ties it to its old self: a test moved to another file, or a file moved
whole, leaves every name in some new text and costs nothing. A renamed test changes no
count, so ``test_removed`` (a count) stays quiet while the deleted/emptied detectors, which
ask whether a file's tests went anywhere, look only at files that lost all of them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from pipeline.core.screening._counters import count_assertions, count_items
from pipeline.core.screening._images import Image, Pair
from pipeline.core.screening._model import ChangeStatus, ScreenHit, ScreenKind, TestItem
from pipeline.events.values import Count

__all__ = ["lost_tests"]

_NAMES_SHOWN = 10


def _items(image: Image | None) -> tuple[TestItem, ...]:
    if image is None or not image.test_code or image.language is None:
        return ()
    return count_items(image.language, image.text)


def _assertions(image: Image | None) -> int:
    if image is None or not image.test_code or image.language is None:
        return 0
    return count_assertions(image.language, image.text)


def _names(names: Iterable[str]) -> str:
    listed = list(names)
    shown = ", ".join(listed[:_NAMES_SHOWN])
    more = len(listed) - _NAMES_SHOWN
    return f"{shown}, ... ({more} more)" if more > 0 else shown


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


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
    listed = _names(gone)
    if change.status is ChangeStatus.DELETED:
        return ScreenHit(
            kind=ScreenKind.TEST_FILE_DELETED,
            path=change.before,
            line=Count(0),
            detail=f"deleted (tests gone: {listed})",
        )
    if change.status is ChangeStatus.RENAMED and pair.new is not None and not pair.new.test_code:
        return ScreenHit(
            kind=ScreenKind.TEST_FILE_DELETED,
            path=change.before,
            line=Count(0),
            detail=f"renamed to {change.path}, not test code (tests gone: {listed})",
        )
    return ScreenHit(
        kind=ScreenKind.TEST_FILE_EMPTIED,
        path=change.path,
        line=Count(0),
        detail=f"{_plural(before, 'test')} before, none now (tests gone: {listed})",
    )


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
                detail = f"{_plural(fewer, 'fewer test')} in all; gone here: {_names(gone[index])}"
                hits.append(
                    ScreenHit(
                        kind=ScreenKind.TEST_REMOVED,
                        path=pair.change.path,
                        line=Count(0),
                        detail=detail,
                    )
                )
    asserted = [(_assertions(p.old), _assertions(p.new)) for p in pairs]
    dropped = sum(a for a, _ in asserted) - sum(b for _, b in asserted)
    if dropped > 0:
        for index, pair in enumerate(pairs):
            before, after = asserted[index]
            if before > after and index not in whole:
                detail = f"{before} -> {_plural(after, 'assertion')} ({dropped} fewer in all)"
                hits.append(
                    ScreenHit(
                        kind=ScreenKind.ASSERTIONS_REMOVED,
                        path=pair.change.path,
                        line=Count(0),
                        detail=detail,
                    )
                )
    return hits
