"""Reducer for miscellaneous facts: checkpoints, finalization steps, loop recovery (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.events import (
    CheckpointSaved,
    CheckpointTrigger,
    ContextCleaned,
    FinalizingStarted,
    LoopRecoveryTriggered,
    MiscEvent,
    PromptPermissionsRestored,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.state import Phase, PipelineState, Step

__all__ = ["reduce_misc"]


def reduce_misc(state: PipelineState, event: MiscEvent) -> PipelineState:
    """Fold one miscellaneous fact into ``state``."""
    progress, ledger = state.progress, state.ledger
    finalizing = progress.phase is Phase.FINALIZING
    match event:
        case CheckpointSaved():
            saved = evolve(
                ledger,
                checkpoint_due=None,
                checkpoint_count=ledger.checkpoint_count + 1,
                last_checkpoint_sequence=event.sequence,
            )
            return advance(state, ledger=saved)
        case ContextCleaned():
            return advance(state)
        case FinalizingStarted():
            if finalizing and progress.step is Step.BEGIN:
                return advance(state, progress=evolve(progress, step=Step.RESTORE))
            return anomaly(state, event, "finalization is not about to begin")
        case PromptPermissionsRestored():
            if finalizing and progress.step is Step.RESTORE:
                return advance(
                    state,
                    progress=evolve(progress, step=Step.COMPLETE),
                    ledger=evolve(ledger, checkpoint_due=CheckpointTrigger.FINAL),
                )
            return anomaly(state, event, "no permissions restore was asked for")
        case LoopRecoveryTriggered():
            return advance(state, ledger=evolve(ledger, loop_recoveries=ledger.loop_recoveries + 1))
        case _:
            assert_never(event)
