"""Provider limits read from an agent invocation's output (I/O: reads its log; the parsers
are pure). Structured output first: each format's parser reads only the CLI's own lines
(``docs/architecture/limits.md``). The words of a plain-text output (a command agent, aider,
which prints no structured errors) are the last resort, and are never read from a format
that has structure: there a tool's output could say anything.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Final

from pipeline.events import LimitScope
from pipeline.handlers.agents.limits._parsers import (
    claude_limit,
    claude_window,
    codex_limit,
    gemini_limit,
    opencode_limit,
)
from pipeline.handlers.agents.limits._signal import LimitSignal, WindowSignal

__all__ = [
    "LIMIT_PARSERS",
    "LimitSignal",
    "WindowSignal",
    "read_limit",
    "read_window",
    "text_limit",
]

LimitParser = Callable[[Iterable[bytes], datetime, tzinfo], LimitSignal | None]

LIMIT_PARSERS: Final[Mapping[str, LimitParser]] = types.MappingProxyType(
    {
        "claude-stream-json": claude_limit,
        "codex-json": codex_limit,
        "gemini-stream-json": gemini_limit,
        "opencode-json": opencode_limit,
    }
)
"""The limit parser of each structured output format that reports limits."""

_TEXT_FORMATS: Final = frozenset({None, "aider"})
"""Formats with no structured errors: their output's last words are all there is."""


def text_limit(output_format: str | None, said: str) -> LimitSignal | None:
    """A limit told only in words (``said``: the output's last line, which the caller found
    to speak of a rate limit), for a format with no structure; None for any other."""
    if output_format not in _TEXT_FORMATS:
        return None
    return LimitSignal(
        scope=LimitScope.REQUESTS, resets_at=None, window=None, source="output text", message=said
    )


def read_limit(
    output_format: str | None, log: Path, now: datetime, zone: tzinfo
) -> LimitSignal | None:
    """The provider limit the invocation whose output is ``log`` ended on, as its structured
    format says (None: none said, no such format, or the log cannot be read)."""
    parser = LIMIT_PARSERS.get(output_format) if output_format is not None else None
    if parser is None:
        return None
    try:
        with log.open("rb") as handle:
            return parser(handle, now, zone)
    except OSError:
        return None


def read_window(output_format: str | None, log: Path) -> WindowSignal | None:
    """How full the provider's fullest usage window is, as the invocation's output told it
    (Claude Code's ``stream-json`` only; None: untold, or the log cannot be read)."""
    if output_format != "claude-stream-json":
        return None
    try:
        with log.open("rb") as handle:
            return claude_window(handle)
    except OSError:
        return None
