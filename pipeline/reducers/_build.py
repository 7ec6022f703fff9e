"""Building the next state once per event, and recording anomalies (pure).

Every reducer path ends in exactly one call to :func:`advance` (or :func:`anomaly`), which builds
the new top-level record with the sequence moved on by one. Building once per event keeps the
fold fast; see docs/architecture/performance.md.
"""

from __future__ import annotations

from attrs import evolve

from pipeline.events import WIRE_TAGS, PipelineEvent
from pipeline.state import AgentCursor, Intake, Ledger, PipelineState, Progress, RunInfo

__all__ = ["advance", "anomaly", "restamp"]


def advance(
    state: PipelineState,
    *,
    run: RunInfo | None = None,
    progress: Progress | None = None,
    agent: AgentCursor | None = None,
    intake: Intake | None = None,
    ledger: Ledger | None = None,
) -> PipelineState:
    """The state after one more event, with the given parts replaced."""
    return PipelineState(
        state.sequence + 1,
        state.run if run is None else run,
        state.progress if progress is None else progress,
        state.agent if agent is None else agent,
        state.intake if intake is None else intake,
        state.ledger if ledger is None else ledger,
    )


def restamp(state: PipelineState, *, agent: AgentCursor) -> PipelineState:
    """``state`` with its agent cursor replaced and its sequence left as it is.

    For a reducer that first applies an implied fact (an earlier attempt that never reported)
    through a helper that already advanced the sequence.
    """
    return PipelineState(
        state.sequence, state.run, state.progress, agent, state.intake, state.ledger
    )


def anomaly(state: PipelineState, event: PipelineEvent, why: str) -> PipelineState:
    """Record that ``event`` did not fit ``state``: counted and described, never raised."""
    ledger = state.ledger
    description = f"{WIRE_TAGS[type(event)]} in {state.progress.phase.value}: {why}"
    return advance(
        state, ledger=evolve(ledger, anomalies=ledger.anomalies + 1, last_anomaly=description)
    )
