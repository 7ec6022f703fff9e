"""Agent handlers: running agent programs and reporting what they did (I/O)."""

from pipeline.handlers.agents._groups import stop_recorded_group
from pipeline.handlers.agents._process import ProcessResult, ProcessSpec, run_process
from pipeline.handlers.agents.pitfalls import known_pitfalls

__all__ = [
    "ProcessResult",
    "ProcessSpec",
    "known_pitfalls",
    "run_process",
    "stop_recorded_group",
]
