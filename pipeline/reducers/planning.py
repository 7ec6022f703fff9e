"""Reducer for planning facts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Phase, PipelineState, Step
from pipeline.events import PlanningEvent, PlanningStarted, PlanProduced, PlanRejected
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import agent_failed, start_development

__all__ = ["reduce_planning"]


def reduce_planning(state: PipelineState, event: PlanningEvent) -> PipelineState:
    """Fold one planning fact into ``state``."""
    progress = state.progress
    in_planning = progress.phase is Phase.PLANNING
    match event:
        case PlanningStarted():
            if in_planning and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(state, event, "planning is not about to begin")
        case PlanProduced():
            if event.iteration != progress.iteration + 1:
                return anomaly(state, event, f"no plan for iteration {event.iteration} is due")
            if in_planning and progress.step is Step.INVOKE:
                ledger = evolve(state.ledger, plan_digest=event.plan_digest)
                return start_development(state, ledger=ledger)
            return anomaly(state, event, "no planner is at work")
        case PlanRejected():
            if in_planning and progress.step is Step.INVOKE:
                return agent_failed(state, True, f"plan rejected: {event.reason}")
            return anomaly(state, event, "no planner is at work")
        case _:
            assert_never(event)
