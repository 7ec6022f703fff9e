"""Reducer for error facts: exhausted chains, workspace failures, spent budgets (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Phase, PipelineState, TerminationReason
from pipeline.events import (
    AgentChainExhausted,
    BudgetExceeded,
    BudgetKind,
    ErrorEvent,
    WorkspaceIoError,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import chain_exhausted, finalize, interrupt

__all__ = ["reduce_error"]


def reduce_error(state: PipelineState, event: ErrorEvent) -> PipelineState:
    """Fold one error fact into ``state``."""
    progress = state.progress
    match event:
        case AgentChainExhausted():
            fix = progress.dev_fix
            if (
                progress.phase is Phase.AWAITING_DEV_FIX
                and fix is not None
                and fix.role is event.role
            ):
                return advance(state)
            if progress.role is event.role:
                return chain_exhausted(state, event.role)
            return anomaly(state, event, f"no {event.role.value} task is under way")
        case WorkspaceIoError():
            ledger = evolve(
                state.ledger,
                last_error=f"workspace {event.kind.value} error at {event.path}: {event.message}",
            )
            return interrupt(
                state, TerminationReason.WORKSPACE_ERROR, progress.phase, progress.step, ledger
            )
        case BudgetExceeded():
            ledger = evolve(state.ledger, last_error=f"{event.budget.value} budget: {event.detail}")
            if progress.phase is Phase.FINALIZING:
                return advance(state, ledger=ledger)
            reason = (
                TerminationReason.MAX_RUNTIME
                if event.budget is BudgetKind.RUNTIME
                else TerminationReason.MAX_COST
            )
            return finalize(state, reason, ledger)
        case _:
            assert_never(event)
