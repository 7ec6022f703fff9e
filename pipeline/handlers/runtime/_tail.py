"""The end of a check's output, as much as the next prompt needs (reads one log file).

unittest and pytest print the failing test's name and assertion above their closing summary,
so a handful of lines keeps only the summary. The tail is the last :data:`TAIL_LINES` lines,
at most :data:`TAIL_BYTES` bytes, cut at a line boundary; the full log's path goes with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

__all__ = ["TAIL_BYTES", "TAIL_LINES", "output_tail"]

TAIL_LINES: Final = 40
"""The most lines of a failed check's output given to the next agent."""
TAIL_BYTES: Final = 4096
"""The most bytes of them."""


def output_tail(log: Path) -> str:
    """The last lines of ``log`` (empty when it cannot be read), trailing blanks dropped."""
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, 2)
            start = max(0, size - TAIL_BYTES)
            handle.seek(start)
            data = handle.read()
    except OSError:
        return ""
    lines = data.decode("utf-8", "replace").rstrip().splitlines()
    if start > 0 and lines:
        lines = lines[1:]  # the first line was cut by the byte limit
    return "\n".join(lines[-TAIL_LINES:])
