"""Agent handlers: running agent programs and reporting what they did (I/O)."""

from pipeline.handlers.agents._groups import stop_recorded_group
from pipeline.handlers.agents._plugins import (
    ENTRY_POINT_GROUP,
    AgentPluginError,
    load_agent_presets,
)
from pipeline.handlers.agents._process import ProcessResult, ProcessSpec, not_started, run_process
from pipeline.handlers.agents.pitfalls import found_pitfalls, known_pitfalls

__all__ = [
    "ENTRY_POINT_GROUP",
    "AgentPluginError",
    "ProcessResult",
    "ProcessSpec",
    "found_pitfalls",
    "known_pitfalls",
    "load_agent_presets",
    "not_started",
    "run_process",
    "stop_recorded_group",
]
