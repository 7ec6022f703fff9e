"""The agent CLIs ralph runs by name, one declared :class:`AgentPreset` per module (pure), and
the registry the code that serves every CLI reads them from.

- :data:`PRESETS` by name, :data:`OUTPUT_FORMATS` by the name ``output_format`` takes;
- :func:`register` adds one (a plugin's, through the ``ralph_pipeline.agents`` entry point
  group, which the ``ralph`` command loads at its start; or an embedding application's);
- :func:`preset_for` finds the one an agent runs (its preset, else the one whose program it
  runs, so a command agent running the same CLI is checked for the same pitfalls).

Adding a CLI is one module here and its line below (``docs/architecture/agents.md``).
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from pipeline.core.agents import aider, claude, codex, gemini, opencode
from pipeline.core.agents._limits import LimitSignal, WindowSignal
from pipeline.core.agents._mcp import MCP_TOOLS, SERVER, HomeReader, McpWiring, Wired
from pipeline.core.agents._preset import (
    AgentPreset,
    FailureHint,
    LimitParser,
    ModelEndpoints,
    OutputFormat,
    Pitfall,
    PromptVia,
    Situation,
    UsageParser,
    WindowParser,
)
from pipeline.core.agents._providers import HTTPS, PROVIDER_HOSTS, Provider
from pipeline.core.agents._usage import UsageFigures

__all__ = [
    "HTTPS",
    "MCP_TOOLS",
    "OUTPUT_FORMATS",
    "PRESETS",
    "PROVIDER_HOSTS",
    "SERVER",
    "AgentPreset",
    "FailureHint",
    "HomeReader",
    "LimitParser",
    "LimitSignal",
    "McpWiring",
    "ModelEndpoints",
    "OutputFormat",
    "Pitfall",
    "PromptVia",
    "Provider",
    "Situation",
    "UsageFigures",
    "UsageParser",
    "WindowParser",
    "WindowSignal",
    "Wired",
    "droppings",
    "failure_hints",
    "preset_for",
    "register",
    "workspace_code",
]

_PRESETS: Final[dict[str, AgentPreset]] = {}
_FORMATS: Final[dict[str, OutputFormat]] = {}

PRESETS: Final[Mapping[str, AgentPreset]] = types.MappingProxyType(_PRESETS)
"""Every agent CLI ralph knows, by preset name (the built-in ones and those registered)."""

OUTPUT_FORMATS: Final[Mapping[str, OutputFormat]] = types.MappingProxyType(_FORMATS)
"""The output formats whose usage ralph can read, by name (``output_format`` in
``[agents.NAME]``)."""


def register(preset: AgentPreset) -> None:
    """Add ``preset`` (again is a no-op). Raises :class:`ValueError` when another preset or
    output format already has its name."""
    known = _PRESETS.get(preset.name)
    if known is not None and known != preset:
        raise ValueError(f"an agent preset named {preset.name!r} is already registered")
    output = preset.output
    if output is not None and _FORMATS.get(output.name, output) != output:
        raise ValueError(f"an output format named {output.name!r} is already registered")
    _PRESETS[preset.name] = preset
    if output is not None:
        _FORMATS[output.name] = output


for _module in (claude, codex, gemini, opencode, aider):
    register(_module.PRESET)


def preset_for(preset: str | None, argv: tuple[str, ...]) -> AgentPreset | None:
    """The CLI an agent runs: its ``preset``, else the first known program among the words
    of ``argv`` (by file name: ``npx claude -p`` runs it too), else None (a program ralph
    knows nothing of)."""
    if preset is not None:
        return _PRESETS.get(preset)
    by_program = {p.program: p for p in _PRESETS.values()}
    names = (word.rsplit("/", 1)[-1] for word in argv)
    return next((by_program[name] for name in names if name in by_program), None)


def failure_hints() -> tuple[FailureHint, ...]:
    """Every known CLI's failure hints (the words are each CLI's own, so any agent's output
    is read with all of them)."""
    return tuple(hint for preset in _PRESETS.values() for hint in preset.hints)


def workspace_code() -> tuple[str, ...]:
    """The workspace paths holding code some CLI runs later: read-only for every agent."""
    return tuple(dict.fromkeys(p for preset in _PRESETS.values() for p in preset.workspace_code))


def droppings() -> tuple[str, ...]:
    """Globs of the files the CLIs leave in a work tree about themselves: never committed."""
    return tuple(dict.fromkeys(g for preset in _PRESETS.values() for g in preset.droppings))
