"""Reducer for final validation facts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Bounce, Phase, PipelineState, Step, TerminationReason
from pipeline.events import (
    ChangesScreened,
    FinalValidationFailed,
    FinalValidationPassed,
    GateFinished,
    GateStarted,
    ScreenBaseRecorded,
    ValidationEvent,
)
from pipeline.reducers._build import anomaly
from pipeline.reducers._escalation import bounced
from pipeline.reducers._gates import (
    changes_screened,
    gate_finished,
    gate_started,
    screen_base_recorded,
)
from pipeline.reducers._topics import VALIDATION_FAILED, gate_success
from pipeline.reducers._transitions import finalize, start_development

__all__ = ["reduce_validation"]


def reduce_validation(state: PipelineState, event: ValidationEvent) -> PipelineState:
    """Fold one validation fact: a gate's start or end (see ``_gates``); a pass of the final
    check completes the run (``no_changes`` when it committed nothing), a failure asks for
    another iteration."""
    progress = state.progress
    validating = progress.phase is Phase.FINAL_VALIDATION and progress.step is Step.VALIDATE
    match event:
        case FinalValidationPassed():
            if not validating:
                return anomaly(state, event, "no validation was asked for")
            # Every way to success ends here, so the completion gate stands here too.
            refused = gate_success(state)
            if refused is not None:
                return refused
            if state.ledger.commits == 0 and _commits(state):
                # A claim of completion with nothing committed (a LOOP_COMPLETE and no work,
                # or checks that pass on the untouched tree) is not a success; a read-only
                # topology (commits = false) commits nothing by design.
                why = "validation passed, but the run committed no change"
                return finalize(
                    state, TerminationReason.NO_CHANGES, evolve(state.ledger, last_error=why)
                )
            return finalize(state, TerminationReason.COMPLETED)
        case FinalValidationFailed():
            if validating:
                ledger = evolve(state.ledger, last_error=f"{VALIDATION_FAILED}{event.reason}")
                if state.intake.completion_claimed:
                    # The claim is spent: the agent must claim completion again after more work.
                    state = evolve(state, intake=evolve(state.intake, completion_claimed=False))
                return start_development(bounced(state, Bounce.VALIDATION_FAILED), ledger=ledger)
            return anomaly(state, event, "no validation was asked for")
        case GateStarted():
            return gate_started(state, event)
        case GateFinished():
            return gate_finished(state, event)
        case ScreenBaseRecorded():
            return screen_base_recorded(state, event)
        case ChangesScreened():
            return changes_screened(state, event)
        case _:
            assert_never(event)


def _commits(state: PipelineState) -> bool:
    """Whether the run's work is committed (all but a topology with ``commits = false``)."""
    topology = None if state.run is None else state.run.loop.topology
    return topology is None or topology.commits
