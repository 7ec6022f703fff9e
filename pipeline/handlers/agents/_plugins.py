"""Agent CLIs from installed plugins (I/O: reads the installed distributions' entry points).

A distribution that declares an entry point in the ``ralph_pipeline.agents`` group, naming
an :class:`~pipeline.core.agents.AgentPreset` object, adds that CLI to every command of
``ralph``, with no change to ralph itself (``docs/architecture/agents.md``).
"""

from __future__ import annotations

import importlib.metadata

from pipeline import PipelineError
from pipeline.core.agents import AgentPreset, register

__all__ = ["ENTRY_POINT_GROUP", "AgentPluginError", "load_agent_presets"]

ENTRY_POINT_GROUP = "ralph_pipeline.agents"
"""The entry point group an agent CLI plugin declares its preset in."""


class AgentPluginError(PipelineError, ValueError):
    """An agent plugin's entry point names no preset, or a name already taken."""


def load_agent_presets() -> tuple[str, ...]:
    """Register the preset of every installed ``ralph_pipeline.agents`` entry point; the
    names registered. Raises :class:`AgentPluginError` naming the entry point whose object
    is no :class:`AgentPreset`, fails to import, or takes a name already known."""
    names = []
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {entry.name} = {entry.value} ({ENTRY_POINT_GROUP})"
        try:
            preset = entry.load()
        except Exception as error:  # a plugin's module may raise anything while it loads
            raise AgentPluginError(
                f"{where} cannot be loaded: {type(error).__name__}: {error}"
            ) from None
        if not isinstance(preset, AgentPreset):
            raise AgentPluginError(f"{where} is no AgentPreset: {type(preset).__name__}")
        try:
            register(preset)
        except ValueError as error:
            raise AgentPluginError(f"{where}: {error}") from None
        names.append(preset.name)
    return tuple(names)
