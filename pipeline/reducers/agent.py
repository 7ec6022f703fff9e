"""Reducer for agent facts: attempts, retries, fallbacks, backoff and published topics (pure).

This is the hot path of a long run, so the common cases build their records with direct
constructor calls instead of ``attrs.evolve``.
"""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.events import (
    AgentEvent,
    BackoffWaited,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    OutputLineMalformed,
    Role,
    StructuredResponseMalformed,
    StructuredResponseReceived,
    TopicPublished,
)
from pipeline.reducers._build import advance, anomaly, restamp, with_agent, with_intake
from pipeline.reducers._transitions import agent_failed, finalize
from pipeline.state import AgentCursor, Intake, Phase, PipelineState, Step, TerminationReason

__all__ = ["reduce_agent"]


def reduce_agent(state: PipelineState, event: AgentEvent) -> PipelineState:
    """Fold one agent fact into ``state``."""
    match event:
        case TopicPublished():
            return _topic(state, event)
        case InvocationStarted():
            return _started(state, event)
        case InvocationSucceeded():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            a = state.agent
            cursor = AgentCursor(a.chain_position, a.retries, a.attempt, False, True, None)
            return with_agent(state, cursor)
        case InvocationFailed():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            message = f"{event.agent} failed ({event.error.value}): {event.message}"
            return agent_failed(state, event.retriable, message)
        case InvocationTimedOut():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            message = f"{event.agent} timed out ({event.kind.value}) after {event.after_ms} ms"
            return agent_failed(state, True, message)
        case BackoffWaited():
            if not _working(state, event.role) or state.agent.backoff_ceiling_ms is None:
                return anomaly(state, event, "no backoff was asked for")
            a = state.agent
            cursor = AgentCursor(
                a.chain_position,
                a.retries,
                a.attempt,
                a.in_flight,
                a.awaiting_output,
                None,
            )
            return with_agent(state, cursor)
        case OutputLineMalformed():
            return _malformed_line(state)
        case StructuredResponseReceived():
            return advance(state)
        case StructuredResponseMalformed():
            i = state.intake
            intake = Intake(
                i.seen_topics,
                i.topics_published,
                i.malformed_lines,
                i.consecutive_malformed,
                i.malformed_responses + 1,
            )
            return advance(state, intake=intake)
        case _:
            assert_never(event)


def _working(state: PipelineState, role: Role) -> bool:
    """Whether ``role`` has a task waiting for (or running) an agent."""
    progress = state.progress
    return progress.step is Step.INVOKE and progress.role is role


def _started(state: PipelineState, event: InvocationStarted) -> PipelineState:
    """A new attempt began. An earlier attempt that never reported an outcome, or that
    succeeded without its output fact, is counted as a retriable failure first, so that no
    handler can keep the loop going forever."""
    if not _working(state, event.role):
        return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
    previous = state.agent
    if previous.in_flight or previous.awaiting_output:
        why = "no outcome" if previous.in_flight else "no output"
        state = agent_failed(state, True, f"previous attempt reported {why}")
        if not _working(state, event.role):
            # That failure exhausted the chain: this start belongs to no task any more.
            return restamp(state, agent=state.agent)
        return restamp(state, agent=_running(state.agent))
    return with_agent(state, _running(previous))


def _running(a: AgentCursor) -> AgentCursor:
    """The cursor once attempt ``a.attempt + 1`` is running (any pending backoff is over)."""
    return AgentCursor(a.chain_position, a.retries, a.attempt + 1, True, False, None)


def _topic(state: PipelineState, event: TopicPublished) -> PipelineState:
    i = state.intake
    seen = i.seen_topics if event.topic in i.seen_topics else i.seen_topics | {event.topic}
    return with_intake(
        state, Intake(seen, i.topics_published + 1, i.malformed_lines, 0, i.malformed_responses)
    )


def _malformed_line(state: PipelineState) -> PipelineState:
    """Count a malformed line; too many in a row with no valid line between end the run."""
    i = state.intake
    consecutive = i.consecutive_malformed + 1
    intake = Intake(
        i.seen_topics,
        i.topics_published,
        i.malformed_lines + 1,
        consecutive,
        i.malformed_responses,
    )
    assert state.run is not None
    if (
        consecutive >= state.run.budget.max_consecutive_malformed
        and state.progress.phase is not Phase.FINALIZING
    ):
        counted = evolve(state, intake=intake)
        return finalize(counted, TerminationReason.VALIDATION_FAILURE)
    return advance(state, intake=intake)
