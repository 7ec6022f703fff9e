"""Building the next state once per event, and recording anomalies (pure).

Every reducer path ends in exactly one call to :func:`advance` (or :func:`anomaly`), which builds
the new top-level record with the sequence moved on by one. Building once per event keeps the
fold fast; see docs/architecture/performance.md.
"""

from __future__ import annotations

from pipeline.events import WIRE_TAGS, PipelineEvent
from pipeline.state import (
    AgentCursor,
    Checkpoints,
    Intake,
    Ledger,
    PipelineState,
    Progress,
    RunInfo,
)
from pipeline.state.changes import ledger_with

__all__ = ["advance", "anomaly", "restamp", "with_agent", "with_intake", "with_progress"]

_new = object.__new__
# The slot descriptors of PipelineState: setting through them is what the frozen class's
# generated __init__ does (via object.__setattr__), minus a lookup per field. The fold builds
# one PipelineState per event, so this is its single hottest line.
_SET_SEQUENCE = PipelineState.__dict__["sequence"].__set__
_SET_RUN = PipelineState.__dict__["run"].__set__
_SET_PROGRESS = PipelineState.__dict__["progress"].__set__
_SET_AGENT = PipelineState.__dict__["agent"].__set__
_SET_INTAKE = PipelineState.__dict__["intake"].__set__
_SET_LEDGER = PipelineState.__dict__["ledger"].__set__
_SET_CHECKPOINTS = PipelineState.__dict__["checkpoints"].__set__


def build_state(
    sequence: int,
    run: RunInfo | None,
    progress: Progress,
    agent: AgentCursor,
    intake: Intake,
    ledger: Ledger,
    checkpoints: Checkpoints,
) -> PipelineState:
    """A ``PipelineState`` equal to ``PipelineState(sequence, run, ...)``, built faster."""
    state: PipelineState = _new(PipelineState)
    _SET_SEQUENCE(state, sequence)
    _SET_RUN(state, run)
    _SET_PROGRESS(state, progress)
    _SET_AGENT(state, agent)
    _SET_INTAKE(state, intake)
    _SET_LEDGER(state, ledger)
    _SET_CHECKPOINTS(state, checkpoints)
    return state


def with_agent(state: PipelineState, agent: AgentCursor) -> PipelineState:
    """The state after one more event that changed only the agent cursor."""
    return build_state(
        state.sequence + 1,
        state.run,
        state.progress,
        agent,
        state.intake,
        state.ledger,
        state.checkpoints,
    )


def with_intake(state: PipelineState, intake: Intake) -> PipelineState:
    """The state after one more event that changed only the intake counters."""
    return build_state(
        state.sequence + 1,
        state.run,
        state.progress,
        state.agent,
        intake,
        state.ledger,
        state.checkpoints,
    )


def with_progress(state: PipelineState, progress: Progress) -> PipelineState:
    """The state after one more event that changed only the progress."""
    return build_state(
        state.sequence + 1,
        state.run,
        progress,
        state.agent,
        state.intake,
        state.ledger,
        state.checkpoints,
    )


def advance(
    state: PipelineState,
    *,
    run: RunInfo | None = None,
    progress: Progress | None = None,
    agent: AgentCursor | None = None,
    intake: Intake | None = None,
    ledger: Ledger | None = None,
    checkpoints: Checkpoints | None = None,
) -> PipelineState:
    """The state after one more event, with the given parts replaced."""
    return build_state(
        state.sequence + 1,
        state.run if run is None else run,
        state.progress if progress is None else progress,
        state.agent if agent is None else agent,
        state.intake if intake is None else intake,
        state.ledger if ledger is None else ledger,
        state.checkpoints if checkpoints is None else checkpoints,
    )


def restamp(state: PipelineState, *, agent: AgentCursor) -> PipelineState:
    """``state`` with its agent cursor replaced and its sequence left as it is.

    For a reducer that first applies an implied fact (an earlier attempt that never reported)
    through a helper that already advanced the sequence.
    """
    return build_state(
        state.sequence,
        state.run,
        state.progress,
        agent,
        state.intake,
        state.ledger,
        state.checkpoints,
    )


def anomaly(state: PipelineState, event: PipelineEvent, why: str) -> PipelineState:
    """Record that ``event`` did not fit ``state``: counted and described, never raised."""
    ledger = state.ledger
    description = f"{WIRE_TAGS[type(event)]} in {state.progress.phase.value}: {why}"
    return advance(
        state, ledger=ledger_with(ledger, anomalies=ledger.anomalies + 1, last_anomaly=description)
    )
