"""What an agent's output says of its provider's limit, and the words that say when it resets
(pure): shared by the limit parsers each agent CLI's module declares."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final, final

from attrs import frozen

from pipeline.core.agents._usage import number
from pipeline.events import LimitScope

__all__ = [
    "BUSY_STATUSES",
    "USAGE_WORDS",
    "LimitSignal",
    "WindowSignal",
    "classified",
    "clock_time_reset",
    "epoch",
    "relative_reset",
    "words",
]


@final
@frozen(kw_only=True)
class LimitSignal:
    """A provider limit as an output told it: its ``scope``, its reset (None: untold), the
    ``window`` the provider named, the ``source`` (which structured signal said so) and the
    provider's own ``message``."""

    scope: LimitScope
    resets_at: datetime | None
    window: str | None
    source: str
    message: str


@final
@frozen(kw_only=True)
class WindowSignal:
    """How full a provider's fullest usage ``window`` is, as an output told it (``utilization``
    from 0, 1 being full), and when it resets (None: untold)."""

    window: str
    utilization: float
    resets_at: datetime | None


_UNITS: Final = {
    **dict.fromkeys(("s", "sec", "second"), 1),
    **dict.fromkeys(("m", "min", "minute"), 60),
    **dict.fromkeys(("h", "hour"), 3600),
    **dict.fromkeys(("d", "day"), 86400),
}
"""Seconds per unit a delay is given in."""
_RELATIVE: Final = re.compile(
    r"(?:try again in|retry in|retry after)\s+(\d+(?:\.\d+)?)\s*"
    r"(s|sec|seconds?|m|min|minutes?|h|hours?|d|days?)\b",
    re.IGNORECASE,
)
_CLOCK: Final = re.compile(r"try again at (\d{1,2}):(\d{2})\s*([AP]M)?", re.IGNORECASE)


def relative_reset(message: str, now: datetime) -> datetime | None:
    """The reset a message gives as a delay (``try again in 2s``, ``Suggested retry after
    900s``, ``Please retry in 35.5s``): the longest one it names, from ``now``."""
    delays = []
    for amount, unit in _RELATIVE.findall(message):
        # "seconds" and "s" alike: the plural's s and the unit s are the same letter.
        word = unit.lower()
        delays.append(float(amount) * _UNITS.get(word, _UNITS.get(word.rstrip("s"), 1)))
    return now + timedelta(seconds=max(delays)) if delays else None


def clock_time_reset(message: str, now: datetime, zone: tzinfo) -> datetime | None:
    """The reset a message gives as a time of day in the machine's zone (``try again at
    9:21 PM``): its next occurrence after ``now``."""
    found = _CLOCK.search(message)
    if found is None:
        return None
    hour, minute, half = int(found[1]), int(found[2]), (found[3] or "").upper()
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "PM" else 0)
    if hour > 23 or minute > 59:
        return None
    local = now.astimezone(zone)
    at = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if at <= local:
        at += timedelta(days=1)
    return at


_MESSAGE_CHARS: Final = 300

BUSY_STATUSES: Final = frozenset({429, 503, 529})
"""The HTTP statuses of a limited or overloaded provider."""

USAGE_WORDS: Final = re.compile(r"usage limit|quota|daily limit|weekly limit", re.IGNORECASE)
"""Words that make a limit a usage window's, not a request rate's."""
_BUSY_WORDS: Final = re.compile(
    r"\b429\b|\b503\b|\b529\b|too many requests|rate limit|overloaded|resource.exhausted",
    re.IGNORECASE,
)


def words(value: Any) -> str:
    """A provider's message, trimmed to 300 characters ("" when it is no string)."""
    return value.strip()[:_MESSAGE_CHARS] if isinstance(value, str) else ""


def epoch(value: Any) -> datetime | None:
    """Seconds since the epoch as a time (None: no plausible number)."""
    seconds = number(value, high=1e11)
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


def classified(message: str, source: str, now: datetime, zone: tzinfo) -> LimitSignal | None:
    """A CLI's own error message as a limit, or None when it says no limit."""
    if USAGE_WORDS.search(message):
        scope = LimitScope.USAGE_WINDOW
    elif _BUSY_WORDS.search(message):
        scope = LimitScope.REQUESTS
    else:
        return None
    reset = relative_reset(message, now) or clock_time_reset(message, now, zone)
    return LimitSignal(scope=scope, resets_at=reset, window=None, source=source, message=message)
