"""The run's timeline: one bar per agent invocation, with its phase, outcome and what it
published (pure). ``ralph report`` draws it; anything else may read it.

The log is folded alongside, so each bar knows the phase, iteration and review pass it ran in,
its place in the role's agent chain (a fallback when past the first agent) and its attempt (a
retry after the first), carries the usage it reported (the ``UsageReported`` between its start
and its outcome), and counts the topics, malformed lines and scope violations read from the
agent's events file after it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import final

import attrs
from attrs import frozen

from pipeline.core.state import Phase, PipelineState, working_hat
from pipeline.events import (
    AgentName,
    Instant,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    OutputLineMalformed,
    PipelineEvent,
    ProviderLimited,
    Role,
    RunInterrupted,
    RunResumed,
    TopicPublished,
    UsageReported,
)
from pipeline.reducers import steps
from pipeline.reducers.views._escalation import LadderMove, ladder_moves

__all__ = ["InvocationBar", "Outcome", "PhaseSpan", "Timeline", "timeline"]


class Outcome(enum.Enum):
    """How an invocation ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    LIMITED = "limited"
    """Its provider limited it (a rate limit or a spent usage window)."""
    CUT_SHORT = "cut_short"
    """The run was interrupted (or crashed and resumed) before the invocation reported."""
    RUNNING = "running"
    """The log ends with the invocation still at work."""


@final
@frozen(kw_only=True)
class InvocationBar:
    """One agent invocation."""

    number: int
    """Its place among the run's invocations, from 1."""
    phase: Phase
    role: Role
    agent: AgentName
    model: str | None
    iteration: int
    review_pass: int
    chain_position: int
    """0: the role's preferred agent; more: a fallback after the agents before it failed."""
    attempt: int
    """The task's invocations so far, this one included (fallbacks count too)."""
    retries: int
    """How many times this agent had already tried the task (0: not a retry)."""
    started_at: Instant
    ended_at: Instant | None
    outcome: Outcome
    detail: str
    """The exit code, the error or the timeout, in words."""
    topics: int = 0
    malformed_lines: int = 0
    scope_violations: int = 0
    usage: UsageReported | None = None
    """What it used and cost, as it reported; None when it reported nothing (it never ran,
    or the log ends before its usage was read)."""
    hat: str | None = None
    """The hat of a topology the agent worked as (None: the built-in pipeline's role)."""

    @property
    def is_fallback(self) -> bool:
        """Whether an agent before this one in the chain gave up on the task."""
        return self.chain_position > 0

    @property
    def is_retry(self) -> bool:
        """Whether this agent had tried the task before."""
        return self.retries > 0

    @property
    def duration_s(self) -> float | None:
        """How long it ran (None while running)."""
        if self.ended_at is None:
            return None
        return (self.ended_at - self.started_at).total_seconds()


@final
@frozen(kw_only=True)
class PhaseSpan:
    """A stretch of the run spent in one phase."""

    phase: Phase
    started_at: Instant
    ended_at: Instant


@final
@frozen(kw_only=True)
class Timeline:
    """A run drawn over time: its invocations, its phases and where it ended up."""

    bars: tuple[InvocationBar, ...]
    phases: tuple[PhaseSpan, ...]
    final: PipelineState
    started_at: Instant | None
    ended_at: Instant | None
    """The time of the last event."""
    moves: tuple[LadderMove, ...] = ()
    """Every move of a hat along its escalation ladder, in order."""


def timeline(events: Iterable[PipelineEvent]) -> Timeline:
    """The timeline of a run's ``events``, in log order."""
    state = PipelineState()
    bars: list[InvocationBar] = []
    phases: list[PhaseSpan] = []
    current: InvocationBar | None = None  # the latest invocation, ended or not
    phase_start: tuple[Phase, Instant] | None = None
    first: Instant | None = None
    last: Instant | None = None
    moves: list[LadderMove] = []
    for before, event, state in steps(events):
        if state.ladders is not before.ladders:
            started = len(bars) + (current is not None)
            moves.extend(ladder_moves(before, state, event.at, started))
        first = event.at if first is None else first
        last = event.at
        if phase_start is None or state.phase is not phase_start[0]:
            if phase_start is not None:
                phases.append(
                    PhaseSpan(phase=phase_start[0], started_at=phase_start[1], ended_at=event.at)
                )
            phase_start = (state.phase, event.at)
        if isinstance(event, InvocationStarted):
            if current is not None:
                bars.append(
                    current
                    if current.ended_at is not None
                    else _closed(current, event.at, Outcome.CUT_SHORT, "never reported")
                )
            current = InvocationBar(
                number=len(bars) + 1,
                phase=before.phase,
                role=event.role,
                agent=event.agent,
                model=event.model,
                iteration=before.progress.iteration,
                review_pass=before.progress.review_pass,
                chain_position=state.agent.chain_position,
                attempt=event.attempt,
                retries=state.agent.retries,
                started_at=event.at,
                ended_at=None,
                outcome=Outcome.RUNNING,
                detail="",
                hat=working.name if (working := working_hat(state, event.role)) else None,
            )
        elif current is not None:
            # Topics are read after the agent exits: they stay with it until the next one.
            if current.ended_at is None:
                if isinstance(event, UsageReported) and current.usage is None:
                    current = attrs.evolve(current, usage=event)
                current = _ended(current, event)
            current = _counted(current, event, before, state)
    if current is not None:
        bars.append(current)
    if phase_start is not None and last is not None:
        phases.append(PhaseSpan(phase=phase_start[0], started_at=phase_start[1], ended_at=last))
    return Timeline(
        bars=tuple(bars),
        phases=tuple(phases),
        final=state,
        started_at=first,
        ended_at=last,
        moves=tuple(moves),
    )


def _closed(bar: InvocationBar, at: Instant, outcome: Outcome, detail: str) -> InvocationBar:
    return attrs.evolve(bar, ended_at=at, outcome=outcome, detail=detail)


def _ended(bar: InvocationBar, event: PipelineEvent) -> InvocationBar:
    """The bar ended by ``event`` (itself when the event does not end an invocation)."""
    match event:
        case InvocationSucceeded():
            return _closed(bar, event.at, Outcome.SUCCEEDED, f"exit {event.exit_code}")
        case InvocationFailed():
            kind = "retriable" if event.retriable else "not retriable"
            return _closed(
                bar, event.at, Outcome.FAILED, f"{event.error.value} ({kind}): {event.message}"
            )
        case InvocationTimedOut():
            detail = f"{event.kind.value} timeout after {event.after_ms / 1000:g} s"
            return _closed(bar, event.at, Outcome.TIMED_OUT, detail)
        case ProviderLimited():
            window = f", {event.window}" if event.window else ""
            reset = f"; resets {event.resets_at.isoformat()}" if event.resets_at else ""
            detail = f"{event.scope.value}{window}{reset}: {event.message}"
            return _closed(bar, event.at, Outcome.LIMITED, detail)
        case RunInterrupted() | RunResumed():
            return _closed(bar, event.at, Outcome.CUT_SHORT, "the run stopped before it reported")
        case _:
            return bar


def _counted(
    bar: InvocationBar, event: PipelineEvent, before: PipelineState, after: PipelineState
) -> InvocationBar:
    """The bar with what ``event`` read from the agent's events file counted in."""
    if isinstance(event, TopicPublished):
        violated = after.intake.scope_violations - before.intake.scope_violations
        return attrs.evolve(
            bar, topics=bar.topics + 1, scope_violations=bar.scope_violations + violated
        )
    if isinstance(event, OutputLineMalformed):
        return attrs.evolve(bar, malformed_lines=bar.malformed_lines + 1)
    return bar
