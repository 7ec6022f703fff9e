"""Reading what an agent invocation used from its output (I/O: reads the invocation's log
file; the parsers themselves are pure, each declared by its CLI's module in
``pipeline.core.agents``).

The format of an agent is its preset's or ``output_format`` in ``[agents.NAME]``.
:func:`read_usage` reads a log through the format's parser; an agent with no known format
reports nothing.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.core.agents import OUTPUT_FORMATS, UsageFigures, UsageParser

__all__ = ["UsageFigures", "UsageParser", "read_usage"]


def read_usage(output_format: str | None, log: Path) -> UsageFigures:
    """What the invocation whose output is ``log`` used, as far as its format tells.

    An unknown or absent format, or a log that cannot be read, reports nothing.
    """
    known = OUTPUT_FORMATS.get(output_format) if output_format is not None else None
    if known is None:
        return UsageFigures()
    try:
        with log.open("rb") as handle:
            return known.usage(handle)
    except OSError:
        return UsageFigures()
