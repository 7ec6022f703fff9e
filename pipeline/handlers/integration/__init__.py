"""The merge queue's handlers: replay a completed run's branch onto its target, gate it, and
move the target by compare-and-swap (I/O: git, processes)."""

from pipeline.handlers.integration._integrator import Integrator
from pipeline.handlers.integration._move import WorkTreeBehindError
from pipeline.handlers.integration._scratch import group_record, holds, revision, scratch_folder
from pipeline.handlers.integration._screen import RunCommits

__all__ = [
    "Integrator",
    "RunCommits",
    "WorkTreeBehindError",
    "group_record",
    "holds",
    "revision",
    "scratch_folder",
]
