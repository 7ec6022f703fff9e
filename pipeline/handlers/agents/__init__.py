"""Agent handlers: running agent programs and reporting what they did (I/O)."""

from pipeline.handlers.agents._process import ProcessResult, ProcessSpec, run_process

__all__ = ["ProcessResult", "ProcessSpec", "run_process"]
