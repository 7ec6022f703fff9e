"""Reducer for dev-fix facts: the fixer's diagnosis and the completion marker (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Phase, PipelineState, Step, TerminationReason
from pipeline.events import (
    AwaitingDevFixEvent,
    CheckpointTrigger,
    CompletionMarkerEmitted,
    DevFixCompleted,
    DevFixTriggered,
)
from pipeline.reducers._build import anomaly
from pipeline.reducers._transitions import fixed, interrupt, transition

__all__ = ["reduce_dev_fix"]


def reduce_dev_fix(state: PipelineState, event: AwaitingDevFixEvent) -> PipelineState:
    """Fold one dev-fix fact into ``state``; the marker ends the run as interrupted, resumable."""
    progress = state.progress
    in_dev_fix = progress.phase is Phase.AWAITING_DEV_FIX
    match event:
        case DevFixTriggered():
            if in_dev_fix and progress.step is Step.TRIGGER:
                return transition(state, evolve(progress, step=Step.PROMPT), None)
            return anomaly(state, event, "dev-fix was not asked for")
        case DevFixCompleted():
            if in_dev_fix and progress.step is Step.INVOKE:
                done = evolve(progress, step=Step.MARKER, dev_fix=fixed(progress, event.success))
                return transition(state, done, CheckpointTrigger.AFTER_DEV_FIX)
            return anomaly(state, event, "no fixer is at work")
        case CompletionMarkerEmitted():
            if in_dev_fix and progress.step is Step.MARKER:
                return interrupt(
                    state,
                    TerminationReason.AGENT_CHAIN_EXHAUSTED,
                    Phase.PLANNING if progress.resume is None else progress.resume.phase,
                    Step.PROMPT,
                )
            return anomaly(state, event, "no completion marker was asked for")
        case _:
            assert_never(event)
