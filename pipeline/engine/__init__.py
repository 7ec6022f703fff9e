"""The engine: the loop that joins orchestration, handlers and reducers."""

from pipeline.engine._memory import LoopBoundExceededError, RunResult, run_in_memory

__all__ = ["LoopBoundExceededError", "RunResult", "run_in_memory"]
