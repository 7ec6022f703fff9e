"""Giving an agent ralph's MCP server (I/O: reads the person's files a CLI's wiring asks for;
the wirings themselves are pure, each declared by its CLI's module in
``pipeline.core.agents``).

A wiring may read a file of the person's under ``$HOME`` (Gemini CLI's settings, which the
sandbox then shows with ralph's server added). An agent can write its CLI's folder there, so
the file is opened following no link in its last two parts, and only if it is a regular
file: a link planted there cannot make ralph show another file (a hidden credential) inside
the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.core.agents import PRESETS, AgentPreset, HomeReader, Wired
from pipeline.core.state import FILE_ONLY_PROMPTS
from pipeline.events import PromptKind
from pipeline.handlers.intake._files import open_regular

__all__ = ["home_reader", "wired_for", "wiring"]

_LIMIT: Final = 1 << 20
"""The largest file a wiring reads: a CLI's settings are a few KiB."""


def home_reader(home: Path) -> HomeReader:
    """Reads a regular file under ``home`` by its relative path (None: absent, unreadable, a
    link, no regular file or over 1 MiB)."""

    def read(relative: str) -> bytes | None:
        try:
            fd = open_regular(home / relative, os.O_RDONLY)
        except (OSError, ValueError):  # UnsafeFileError is a ValueError
            return None
        try:
            with os.fdopen(fd, "rb") as handle:
                data = handle.read(_LIMIT + 1)
        except OSError:
            return None
        return data if len(data) <= _LIMIT else None

    return read


def wiring(
    preset: AgentPreset | None,
    command: tuple[str, ...],
    environ: Mapping[str, str],
    *,
    sandboxed: bool,
) -> Wired | str:
    """What an agent of ``preset`` with ``environ`` gets so that its CLI starts the server
    ``command``, or why it gets nothing."""
    if preset is None:
        return 'none: a command agent may start it itself, as `"$RALPH_BIN" mcp`'
    if preset.mcp is None:
        return f"none: {preset.name} has no MCP client"
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    wired = preset.mcp.wire(command, environ, home_reader(home))
    if isinstance(wired, Wired) and wired.home_files and not sandboxed:
        name = preset.name
        return f"none: {name} takes it in the sandbox only (ralph never adds it to your files)"
    return wired


def wired_for(
    preset: str | None,
    kind: PromptKind,
    card: Path,
    environ: Mapping[str, str],
    sandboxed: bool,
) -> Wired | None:
    """What an agent of ``preset`` (None: a command) gets on a ``kind`` prompt so that its
    CLI starts ralph's server on ``card``, run by the run's own ralph (``$RALPH_BIN``); None:
    not wired, on a prompt that asks for no topic and while the card is not written (every
    tool would fail)."""
    if preset is None or kind in FILE_ONLY_PROMPTS or not card.is_file():
        return None
    command = (environ.get("RALPH_BIN", "ralph"), "mcp", "--card", str(card))
    wired = wiring(PRESETS.get(preset), command, environ, sandboxed=sandboxed)
    return wired if isinstance(wired, Wired) else None
