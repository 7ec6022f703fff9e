"""Reducer for development facts: iterations and their outcomes (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Phase, PipelineState, Step
from pipeline.events import (
    DevelopmentEvent,
    DevelopmentIterationCompleted,
    DevelopmentIterationStarted,
    HatActivated,
    IterationStatus,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._escalation import hat_woken
from pipeline.reducers._iterations import iteration_failed
from pipeline.reducers._transitions import (
    task_done,
)

__all__ = ["reduce_development"]


def reduce_development(state: PipelineState, event: DevelopmentEvent) -> PipelineState:
    """Fold one development fact into ``state``."""
    progress = state.progress
    current = progress.phase is Phase.DEVELOPMENT and event.iteration == progress.iteration
    hat = state.routing.hat
    match event:
        case DevelopmentIterationStarted():
            if current and progress.step is Step.BEGIN and hat is None:
                return advance(state, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(state, event, f"iteration {event.iteration} is not about to begin")
        case HatActivated():
            if current and progress.step is Step.BEGIN and hat is not None and event.hat == hat:
                woken = hat_woken(state, hat, event.topic)
                return advance(woken, progress=evolve(progress, step=Step.PROMPT))
            return anomaly(
                state, event, f"hat {event.hat!r} is not about to begin iteration {event.iteration}"
            )
        case DevelopmentIterationCompleted():
            if current and progress.step is Step.INVOKE:
                return _iteration_completed(state, event)
            if hat is not None and _ended_by_its_topics(state, event):
                return advance(state)
            return anomaly(state, event, f"no developer is at work on iteration {event.iteration}")
        case _:
            assert_never(event)


def _iteration_completed(
    state: PipelineState, event: DevelopmentIterationCompleted
) -> PipelineState:
    """Commit useful work and go on: another iteration when more is needed, else review;
    the iteration's round of gates first, when one applies.

    A failed iteration commits nothing; too many failures in a row end the run. In a user's
    topology, the next hat is routed when the next iteration starts; a failed activation
    gives its topic back, so that its hat tries again; a topology that does not commit goes
    straight on.
    """
    run = state.run
    assert run is not None
    progress = state.progress
    topology = run.loop.topology
    if topology is not None and event.status is IterationStatus.FAILED:
        routing = state.routing
        if routing.trigger is not None:
            again = evolve(routing.trigger, hat=routing.hat)
            state = evolve(state, routing=evolve(routing, pending=(again, *routing.pending)))
    if event.status is IterationStatus.FAILED:
        ledger = evolve(state.ledger, last_error=f"iteration {event.iteration} failed")
        return iteration_failed(state, progress, ledger)
    if topology is not None:
        return task_done(state, Phase.DEVELOPMENT if topology.commits else None)
    more = event.status is IterationStatus.PARTIAL
    return task_done(state, Phase.DEVELOPMENT if more else Phase.REVIEW)


def _ended_by_its_topics(state: PipelineState, event: DevelopmentIterationCompleted) -> bool:
    """Whether ``event`` ends a topology hat's activation whose own topics already ended the
    run (a cancellation, a stale loop): they come before it, and it changes nothing then."""
    progress = state.progress
    return progress.phase is Phase.FINALIZING and event.iteration == progress.iteration
