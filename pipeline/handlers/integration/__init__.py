"""The merge queue's handlers: replay a completed run's branch onto its target, gate it, and
move the target by compare-and-swap (I/O: git, processes)."""

from pipeline.handlers.integration._integrator import Integrator
from pipeline.handlers.integration._scratch import drop_scratch, holds, revision, scratch_folder

__all__ = ["Integrator", "drop_scratch", "holds", "revision", "scratch_folder"]
