"""Reducer for development facts: iterations and their outcomes (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.events import (
    CheckpointTrigger,
    DevelopmentEvent,
    DevelopmentIterationCompleted,
    DevelopmentIterationStarted,
    IterationStatus,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import (
    advance_view,
    finalize,
    start_commit,
    start_development,
)
from pipeline.state import Phase, PipelineState, Step, TerminationReason

__all__ = ["reduce_development"]


def reduce_development(state: PipelineState, event: DevelopmentEvent) -> PipelineState:
    """Fold one development fact into ``state``."""
    progress = state.progress
    current = progress.phase is Phase.DEVELOPMENT and event.iteration == progress.iteration
    match event:
        case DevelopmentIterationStarted():
            if current and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(state, event, f"iteration {event.iteration} is not about to begin")
        case DevelopmentIterationCompleted():
            if current and progress.step is Step.INVOKE:
                return _iteration_completed(state, event)
            return anomaly(state, event, f"no developer is at work on iteration {event.iteration}")
        case _:
            assert_never(event)


def _iteration_completed(
    state: PipelineState, event: DevelopmentIterationCompleted
) -> PipelineState:
    """Commit useful work and go on: another iteration when more is needed, else review.

    A failed iteration commits nothing; too many failures in a row end the run.
    """
    assert state.run is not None
    progress = state.progress
    if event.status is IterationStatus.FAILED:
        failed = progress.consecutive_failed_iterations + 1
        counted = evolve(progress, consecutive_failed_iterations=failed)
        ledger = evolve(state.ledger, last_error=f"iteration {event.iteration} failed")
        if failed >= state.run.budget.max_consecutive_failures:
            return finalize(
                advance_view(state, counted), TerminationReason.CONSECUTIVE_FAILURES, ledger
            )
        return start_development(state, counted, ledger, CheckpointTrigger.ITERATION)
    more = event.status is IterationStatus.PARTIAL
    counted = evolve(progress, consecutive_failed_iterations=0)
    return start_commit(state, Phase.DEVELOPMENT if more else Phase.REVIEW, counted)
