"""A developer task's work that did not hold up (pure): the one rule that a failed iteration,
a blocking gate and a blocking hook before a commit share."""

from __future__ import annotations

from attrs import evolve

from pipeline.core.state import Ledger, PipelineState, Progress, TerminationReason
from pipeline.events import CheckpointTrigger
from pipeline.reducers._transitions import advance_view, finalize, start_development

__all__ = ["iteration_failed"]


def iteration_failed(state: PipelineState, progress: Progress, ledger: Ledger) -> PipelineState:
    """``state`` with ``progress`` after one more failed iteration in a row: development goes
    on (nothing of the failed work is committed), or, at ``max_consecutive_failures``, the
    run ends as ``consecutive_failures``."""
    assert state.run is not None, "an iteration belongs to a started run"
    failed = progress.consecutive_failed_iterations + 1
    counted = evolve(progress, consecutive_failed_iterations=failed)
    if failed >= state.run.budget.max_consecutive_failures:
        reason = TerminationReason.CONSECUTIVE_FAILURES
        return finalize(advance_view(state, counted), reason, ledger)
    return start_development(state, counted, ledger, CheckpointTrigger.ITERATION)
