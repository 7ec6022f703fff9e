"""Reducer for miscellaneous facts: checkpoints, finalization steps, loop recovery (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Checkpoints, Ledger, Phase, PipelineState, Step
from pipeline.events import (
    CheckpointSaved,
    CheckpointTrigger,
    FinalizingStarted,
    MiscEvent,
    PromptPermissionsRestored,
)
from pipeline.reducers._build import advance, anomaly

__all__ = ["reduce_misc"]


def reduce_misc(state: PipelineState, event: MiscEvent) -> PipelineState:
    """Fold one miscellaneous fact into ``state``."""
    progress, ledger = state.progress, state.ledger
    finalizing = progress.phase is Phase.FINALIZING
    match event:
        case CheckpointSaved():
            saved = Checkpoints(
                due=None, count=state.checkpoints.count + 1, last_sequence=event.sequence
            )
            return advance(state, checkpoints=saved, ledger=_bookkept(ledger, state, event))
        case FinalizingStarted():
            if finalizing and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.RESTORE))
            return anomaly(state, event, "finalization is not about to begin")
        case PromptPermissionsRestored():
            if finalizing and progress.step is Step.RESTORE:
                return advance(
                    state,
                    progress=evolve(progress, step=Step.COMPLETE),
                    ledger=evolve(ledger, protected_prompt=None),
                    checkpoints=Checkpoints(
                        due=CheckpointTrigger.FINAL,
                        count=state.checkpoints.count,
                        last_sequence=state.checkpoints.last_sequence,
                    ),
                )
            return anomaly(state, event, "no permissions restore was asked for")
        case _:
            assert_never(event)


def _bookkept(ledger: Ledger, state: PipelineState, event: CheckpointSaved) -> Ledger:
    """The ledger after ``event``: an interruption's checkpoint is not counted in effect ids,
    and a checkpoint saved right after a resume keeps the run just resumed (the commit asked
    for next may still be the one the stopped process made)."""
    interruption = event.trigger is CheckpointTrigger.INTERRUPTION
    just_resumed = ledger.last_resume_sequence == state.sequence
    if not interruption and not just_resumed:
        return ledger
    return evolve(
        ledger,
        interruption_facts=ledger.interruption_facts + interruption,
        last_resume_sequence=state.sequence + 1 if just_resumed else ledger.last_resume_sequence,
    )
