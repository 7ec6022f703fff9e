"""Reading what an agent invocation used from its output: one parser per output format (I/O:
reads the invocation's log file; the parsers themselves are pure).

The format of an agent is its preset's (``claude`` prints ``stream-json``, ``codex exec
--json`` JSON lines, ...) or ``output_format`` in ``[agents.NAME]``. :func:`read_usage`
reads a log through the format's parser; an agent with no known format reports nothing.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.handlers.agents.usage._aider import parse_aider
from pipeline.handlers.agents.usage._claude import parse_claude
from pipeline.handlers.agents.usage._codex import parse_codex
from pipeline.handlers.agents.usage._figures import UsageFigures, UsageParser
from pipeline.handlers.agents.usage._gemini import parse_gemini
from pipeline.handlers.agents.usage._opencode import parse_opencode

__all__ = ["PARSERS", "UsageFigures", "UsageParser", "read_usage"]

PARSERS: Final[Mapping[str, UsageParser]] = types.MappingProxyType(
    {
        "claude-stream-json": parse_claude,
        "codex-json": parse_codex,
        "gemini-stream-json": parse_gemini,
        "opencode-json": parse_opencode,
        "aider": parse_aider,
    }
)
"""The parser of each output format, by the name ``output_format`` takes."""


def read_usage(output_format: str | None, log: Path) -> UsageFigures:
    """What the invocation whose output is ``log`` used, as far as its format tells.

    An unknown or absent format, or a log that cannot be read, reports nothing.
    """
    parser = PARSERS.get(output_format) if output_format is not None else None
    if parser is None:
        return UsageFigures()
    try:
        with log.open("rb") as handle:
            return parser(handle)
    except OSError:
        return UsageFigures()
