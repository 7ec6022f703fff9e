"""Provider limits from each agent CLI's structured output (pure), as the pinned CLIs were
measured to print them against a scripted model server (``docs/research/provider-limits.md``).

Only the CLI's own top-level lines are read (Claude Code's ``rate_limit_event`` and
``result``, Codex's ``turn.failed``, Gemini CLI's ``result``, OpenCode's ``error``), never a
tool's output or the model's text: a file the agent printed that says "usage limit" is no limit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any, Final

from pipeline.events import LimitScope
from pipeline.handlers.agents.limits._signal import (
    LimitSignal,
    WindowSignal,
    clock_time_reset,
    relative_reset,
)
from pipeline.handlers.agents.usage._figures import json_object, mapping

__all__ = ["claude_limit", "claude_window", "codex_limit", "gemini_limit", "opencode_limit"]

_MESSAGE_CHARS: Final = 300
_REQUESTS = LimitScope.REQUESTS
_WINDOW = LimitScope.USAGE_WINDOW

_BUSY_STATUSES: Final = frozenset({429, 503, 529})
"""The HTTP statuses of a limited or overloaded provider (Claude Code's
``api_error_status``, OpenCode's ``statusCode``)."""

_USAGE_WORDS: Final = re.compile(r"usage limit|quota|daily limit|weekly limit", re.IGNORECASE)
_BUSY_WORDS: Final = re.compile(
    r"\b429\b|\b503\b|\b529\b|too many requests|rate limit|overloaded|resource.exhausted",
    re.IGNORECASE,
)


def _words(value: Any) -> str:
    return value.strip()[:_MESSAGE_CHARS] if isinstance(value, str) else ""


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
        return datetime.fromtimestamp(value, UTC)
    return None


def claude_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Claude Code's: an error ``result`` with ``api_error_status`` 429, 529 or 503, or
    ``api_error`` ``usage_limit_reached``; a ``rate_limit_event`` whose status is
    ``rejected`` names the window (``rateLimitType``) and its reset (``resetsAt``)."""
    rejected: Mapping[str, Any] | None = None
    result: Mapping[str, Any] | None = None
    for line in lines:
        obj = json_object(line)
        if obj is None:
            continue
        if obj.get("type") == "rate_limit_event":
            info = mapping(obj.get("rate_limit_info"))
            if info.get("status") == "rejected":
                rejected = info
        elif obj.get("type") == "result":
            result = obj
    if result is None or result.get("is_error") is not True:
        return None
    status = result.get("api_error_status")
    message = _words(result.get("result"))
    if rejected is not None:
        window = rejected.get("rateLimitType")
        return LimitSignal(
            scope=_WINDOW,
            resets_at=_epoch(rejected.get("resetsAt")),
            window=window if isinstance(window, str) and window else None,
            source="claude rate_limit_event",
            message=message,
        )
    if result.get("api_error") == "usage_limit_reached":
        return LimitSignal(
            scope=_WINDOW,
            resets_at=None,
            window=None,
            source="claude result api_error",
            message=message,
        )
    if status in _BUSY_STATUSES:
        return LimitSignal(
            scope=_REQUESTS,
            resets_at=None,
            window=None,
            source=f"claude result api_error_status {status}",
            message=message,
        )
    return None


def _classified(message: str, source: str, now: datetime, zone: tzinfo) -> LimitSignal | None:
    """A CLI's own error message as a limit, or None when it says no limit."""
    reset = relative_reset(message, now) or clock_time_reset(message, now, zone)
    if _USAGE_WORDS.search(message):
        return LimitSignal(
            scope=_WINDOW, resets_at=reset, window=None, source=source, message=message
        )
    if _BUSY_WORDS.search(message):
        return LimitSignal(
            scope=_REQUESTS, resets_at=reset, window=None, source=source, message=message
        )
    return None


def codex_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Codex's: the message of its last ``turn.failed`` (``exceeded retry limit, last status:
    429``, ``You've hit your usage limit ... try again at 9:21 PM``, ``Quota exceeded``)."""
    failed = None
    for line in lines:
        obj = json_object(line)
        if obj is not None and obj.get("type") == "turn.failed":
            failed = _words(mapping(obj.get("error")).get("message"))
    return None if not failed else _classified(failed, "codex turn.failed", now, zone)


def gemini_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Gemini CLI's: the message of an error ``result`` (``Rate limit reached ... Suggested
    retry after 2s``, ``You have exhausted your daily quota``, ``The model is overloaded``)."""
    error = None
    for line in lines:
        obj = json_object(line)
        if obj is not None and obj.get("type") == "result" and obj.get("status") == "error":
            error = _words(mapping(obj.get("error")).get("message"))
    return None if not error else _classified(error, "gemini result error", now, zone)


def opencode_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """OpenCode's: its last ``error`` event that is an ``APIError`` with ``statusCode`` 429,
    503 or 529; the provider's ``retry-after`` header (seconds) is the reset, and a message
    speaking of a quota or usage limit makes it a usage window."""
    found = None
    for line in lines:
        obj = json_object(line)
        if obj is not None and obj.get("type") == "error":
            error = mapping(obj.get("error"))
            data = mapping(error.get("data"))
            if error.get("name") == "APIError" and data.get("statusCode") in _BUSY_STATUSES:
                found = data
    if found is None:
        return None
    message = _words(found.get("message"))
    after = mapping(found.get("responseHeaders")).get("retry-after")
    delay = after.strip() if isinstance(after, str) else ""
    reset = now + timedelta(seconds=int(delay)) if delay.isdigit() else None
    scope = _WINDOW if _USAGE_WORDS.search(message) else _REQUESTS
    source = f"opencode error statusCode {found.get('statusCode')}"
    return LimitSignal(scope=scope, resets_at=reset, window=None, source=source, message=message)


def _share(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 100:
        return float(value)
    return None


def claude_window(lines: Iterable[bytes]) -> WindowSignal | None:
    """Claude Code's: the fullest window of its last ``rate_limit_event`` (``unifiedWindows``,
    each with its ``utilization`` and ``resetsAt``), which it prints on successful replies too
    whenever the provider's limits change."""
    windows: Mapping[str, Any] = {}
    for line in lines:
        # Read after every invocation, whose log the usage parser has just read whole: only
        # the lines that can be one are parsed.
        if b"rate_limit_event" not in line:
            continue
        obj = json_object(line)
        if obj is not None and obj.get("type") == "rate_limit_event":
            windows = mapping(mapping(obj.get("rate_limit_info")).get("unifiedWindows"))
    found = [
        WindowSignal(
            window=name, utilization=share, resets_at=_epoch(mapping(window).get("resetsAt"))
        )
        for name, window in windows.items()
        if isinstance(name, str)
        and (share := _share(mapping(window).get("utilization"))) is not None
    ]
    return max(found, key=lambda w: w.utilization, default=None)
