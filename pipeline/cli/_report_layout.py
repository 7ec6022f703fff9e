"""Where ``ralph report`` draws things on a lane of its timeline, and how it writes a duration
(pure): shared by the invocations' lanes and the gates' lane."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

__all__ = ["MIN_WIDTH_PCT", "placed", "seconds_text"]

MIN_WIDTH_PCT: Final = 0.6
"""A bar never narrower than this, so that an invocation of a millisecond still shows."""


def seconds_text(value: float | None) -> str:
    """A duration in seconds as people read it (``running`` when it has none yet)."""
    return "running" if value is None else f"{value:.3f} s" if value < 10 else f"{value:.1f} s"


def _position(at: datetime, start: datetime, total: float) -> float:
    return 100.0 * (at - start).total_seconds() / total


def placed(
    spans: Sequence[tuple[datetime, datetime | None]], start: datetime, end: datetime, total: float
) -> list[tuple[float, float]]:
    """Each span's (left, width) on a lane, in percent, for spans in start order: placed by
    its time but never over the one before (a failure of a millisecond is drawn wider than it
    was, so it must not be hidden); a span with no end runs to ``end``."""
    places = []
    cursor = 0.0
    for began, ended in spans:
        left = max(_position(began, start, total), cursor)
        right = _position(ended or end, start, total)
        width = max(right - left, MIN_WIDTH_PCT)
        left = max(0.0, min(left, 100.0 - width))
        cursor = left + width
        places.append((left, width))
    return places
