"""The merge queue's handlers: replay a completed run's branch onto its target, gate it, and
move the target by compare-and-swap (I/O: git, processes)."""

from pipeline.handlers.integration._integrator import Integrator, group_record, scratch_folder
from pipeline.handlers.integration._move import WorkTreeBehindError
from pipeline.handlers.integration._refs import LOCAL_REFS, LocalRefs, TargetRefs
from pipeline.handlers.integration._replay import RunCommits

__all__ = [
    "LOCAL_REFS",
    "Integrator",
    "LocalRefs",
    "RunCommits",
    "TargetRefs",
    "WorkTreeBehindError",
    "group_record",
    "scratch_folder",
]
