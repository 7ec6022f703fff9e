"""Reducer for review facts: passes, verdicts and fix attempts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Bounce, Phase, PipelineState, Step
from pipeline.events import (
    FixAttemptCompleted,
    FixAttemptStarted,
    IterationStatus,
    ReviewClean,
    ReviewEvent,
    ReviewIssuesFound,
    ReviewPassStarted,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._escalation import bounced, succeeded
from pipeline.reducers._transitions import start_review, start_validation, task_done, transition

__all__ = ["reduce_review"]


def reduce_review(state: PipelineState, event: ReviewEvent) -> PipelineState:
    """Fold one review fact into ``state``."""
    progress = state.progress
    current = progress.phase is Phase.REVIEW and event.review_pass == progress.review_pass
    reviewing = current and not progress.fixing
    fixing = current and progress.fixing
    match event:
        case ReviewPassStarted():
            if reviewing and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(state, event, f"review pass {event.review_pass} is not about to begin")
        case ReviewClean():
            if reviewing and progress.step is Step.INVOKE:
                return start_validation(succeeded(state))
            return anomaly(state, event, "no reviewer is at work")
        case ReviewIssuesFound():
            if not (reviewing and progress.step is Step.INVOKE):
                return anomaly(state, event, "no reviewer is at work")
            if event.count == 0:
                return start_validation(succeeded(state))
            fixing_now = evolve(progress, fixing=True, step=Step.BEGIN)
            return transition(bounced(state, Bounce.REVIEW_ISSUES), fixing_now, None)
        case FixAttemptStarted():
            if fixing and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(state, event, "no fix attempt is about to begin")
        case FixAttemptCompleted():
            if not (fixing and progress.step is Step.INVOKE):
                return anomaly(state, event, "no fix attempt is under way")
            if event.status is IterationStatus.FAILED:
                return start_review(state, evolve(progress, fixing=False))
            return task_done(state, Phase.REVIEW)
        case _:
            assert_never(event)
