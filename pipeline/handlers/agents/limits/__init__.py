"""Provider limits read from an agent invocation's output (I/O: reads its log; the parsers
are pure, each declared by its CLI's module in ``pipeline.core.agents``). Structured output
first: each format's parser reads only the CLI's own lines (``docs/architecture/limits.md``).
The words of a plain-text output (a command agent, or a format with no structured errors)
are the last resort, and are never read from a format that has structure: there a tool's
output could say anything.
"""

from __future__ import annotations

from datetime import datetime, tzinfo
from pathlib import Path

from pipeline.core.agents import OUTPUT_FORMATS, LimitSignal, WindowSignal
from pipeline.events import LimitScope

__all__ = ["LimitSignal", "WindowSignal", "read_limit", "read_window", "text_limit"]


def text_limit(output_format: str | None, said: str) -> LimitSignal | None:
    """A limit told only in words (``said``: the output's last line, which the caller found
    to speak of a rate limit), for a format with no structure; None for any other."""
    known = OUTPUT_FORMATS.get(output_format) if output_format is not None else None
    if known is not None and known.limit is not None:
        return None
    return LimitSignal(
        scope=LimitScope.REQUESTS, resets_at=None, window=None, source="output text", message=said
    )


def read_limit(
    output_format: str | None, log: Path, now: datetime, zone: tzinfo
) -> LimitSignal | None:
    """The provider limit the invocation whose output is ``log`` ended on, as its structured
    format says (None: none said, no such format, or the log cannot be read)."""
    known = OUTPUT_FORMATS.get(output_format) if output_format is not None else None
    if known is None or known.limit is None:
        return None
    try:
        with log.open("rb") as handle:
            return known.limit(handle, now, zone)
    except OSError:
        return None


def read_window(output_format: str | None, log: Path) -> WindowSignal | None:
    """How full the provider's fullest usage window is, as the invocation's output told it
    (only formats that say so; None: untold, or the log cannot be read)."""
    known = OUTPUT_FORMATS.get(output_format) if output_format is not None else None
    if known is None or known.window is None:
        return None
    try:
        with log.open("rb") as handle:
            return known.window(handle)
    except OSError:
        return None
