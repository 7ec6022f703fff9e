"""Reducer for agent facts: attempts, retries, fallbacks, backoff and published topics (pure).

This is the hot path of a long run, so the common cases build their records with direct
constructor calls instead of ``attrs.evolve``.
"""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import (
    AFTER_POINTS,
    FEEDBACK_EXCERPT_CHARS,
    FILE_ONLY_PROMPTS,
    MAX_FEEDBACK_LINES,
    AfterInvocation,
    AgentCursor,
    Hooks,
    MalformedLineNote,
    Notice,
    Phase,
    PipelineState,
    Step,
    TerminationReason,
    task_prompt_kind,
)
from pipeline.events import (
    CONNECTION_REFUSED_TOPIC,
    MALFORMED_TOPIC,
    AgentEvent,
    BackoffWaited,
    ConnectionRefused,
    ErrorKind,
    EventsFileRead,
    EventsFileTruncated,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    LimitResetAwaited,
    OutputLineMalformed,
    ProviderLimited,
    ResponseSubmitted,
    Role,
    TopicPublished,
    UsageReported,
    UsageWindowReported,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._limits import (
    limit_reset_awaited,
    provider_limited,
    usage_window_reported,
)
from pipeline.reducers._notices import add_notice, seen_with
from pipeline.reducers._responses import judge_response
from pipeline.reducers._spend import fold_usage
from pipeline.reducers._topics import judge_topic, notify
from pipeline.reducers._transitions import LOG_NAMED, agent_failed, finalize

__all__ = ["reduce_agent"]


def _repeats(last_failure: str | None, message: str) -> bool:
    """Whether ``message`` says what ``last_failure`` said, apart from the log file each names
    (every attempt writes its own)."""
    return last_failure is not None and last_failure == LOG_NAMED.sub("", message)


def reduce_agent(state: PipelineState, event: AgentEvent) -> PipelineState:
    """Fold one agent fact into ``state``."""
    match event:
        case TopicPublished():
            return judge_topic(state, event)
        case InvocationStarted():
            return _started(state, event)
        case InvocationSucceeded():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            done = evolve(
                state.agent, in_flight=False, awaiting_output=True, backoff_ceiling_ms=None
            )
            return advance(state, agent=done)
        case InvocationFailed():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            message = f"{event.agent} failed ({event.error.value}): {event.message}"
            # The same failure twice in a row from the same agent will not go away by itself.
            retriable = event.retriable and not _repeats(state.agent.last_failure, message)
            failed = agent_failed(
                state, retriable, message, configuration=event.error is ErrorKind.CONFIGURATION
            )
            return _own_failure(state, failed)
        case InvocationTimedOut():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            message = f"{event.agent} timed out ({event.kind.value}) after {event.after_ms} ms"
            return _own_failure(state, agent_failed(state, True, message))
        case BackoffWaited():
            if not _working(state, event.role) or state.agent.backoff_ceiling_ms is None:
                return anomaly(state, event, "no backoff was asked for")
            return advance(state, agent=evolve(state.agent, backoff_ceiling_ms=None))
        case OutputLineMalformed():
            return _malformed_line(state, event)
        case EventsFileRead():
            return _read(state, event)
        case EventsFileTruncated():
            # Read again from the start; line numbers go on, so none is used twice.
            return advance(state, intake=evolve(state.intake, events_offset=0))
        case ResponseSubmitted():
            return judge_response(state, event)
        case UsageReported():
            return fold_usage(state, event)
        case ConnectionRefused():
            times = "once" if event.count == 1 else f"{event.count} times"
            text = (
                f"the sandbox refused your connection to {event.endpoint} ({times}): this run "
                "lets agents reach only their model endpoint and the hosts in [sandbox] allow; "
                "work without it, or say in your report what you need"
            )
            notice = Notice(topic=CONNECTION_REFUSED_TOPIC, text=text)
            return notify(state, add_notice(state.intake, notice))
        case ProviderLimited():
            if not _working(state, event.role):
                return anomaly(state, event, f"no {event.role.value} task is waiting for an agent")
            return provider_limited(state, event)
        case LimitResetAwaited():
            return limit_reset_awaited(state, event)
        case UsageWindowReported():
            return usage_window_reported(state, event)
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
    i = state.intake
    # Lines read after this invocation are judged by this role's hat, and not at all when
    # its prompt asks for a file only (in runs recorded since schema 21: an older run's
    # checkpoints hold no such mark).
    run = state.run
    judged = run is not None and run.loop.file_only_turns
    file_only = judged and task_prompt_kind(state) in FILE_ONLY_PROMPTS
    same = i.publisher is event.role and i.file_only is file_only
    intake = i if same else evolve(i, publisher=event.role, file_only=file_only)
    hooks = _watched(state, event)
    if previous.in_flight or previous.awaiting_output:
        state = evolve(state, intake=intake)
        why = "no outcome" if previous.in_flight else "no output"
        state = agent_failed(state, True, f"previous attempt reported {why}")
        if not _working(state, event.role):
            # That failure exhausted the chain: this start belongs to no task any more.
            return evolve(state, agent=state.agent)
        return evolve(state, agent=_running(state.agent), hooks=hooks)
    return advance(state, agent=_running(previous), intake=intake, hooks=hooks)


def _watched(state: PipelineState, event: InvocationStarted) -> Hooks:
    """The hooks, with this invocation the one their after-invocation hooks watch (when the
    run has any)."""
    run = state.run
    if run is None or not any(hook.point in AFTER_POINTS for hook in run.loop.hooks):
        return state.hooks
    return evolve(state.hooks, after=AfterInvocation(started=event, at=state.sequence))


def _own_failure(state: PipelineState, failed: PipelineState) -> PipelineState:
    """``failed`` (the fold of a failure in ``state``), noting for the hooks on failure that
    the invocation under way failed: a later failure (of its report, say) is not its own."""
    after = state.hooks.after
    if after is None or not state.agent.in_flight:
        return failed
    return evolve(failed, hooks=evolve(failed.hooks, after=evolve(after, failed=True)))


def _running(a: AgentCursor) -> AgentCursor:
    """The cursor once attempt ``a.attempt + 1`` is running (any pending backoff or wait for a
    limit's reset is over)."""
    return evolve(
        a,
        attempt=a.attempt + 1,
        in_flight=True,
        awaiting_output=False,
        backoff_ceiling_ms=None,
        limit_until=None,
        limit_stop=False,
    )


def _malformed_line(state: PipelineState, event: OutputLineMalformed) -> PipelineState:
    """Count a malformed line and owe the agent feedback on it; too many in a row with no
    valid line between end the run.

    The line is also a :data:`MALFORMED_TOPIC` in the topic log. When it arrives while the
    task waits to invoke its agent again (a retry), the task goes back to its prompt, so that
    the very next prompt the agent reads carries the feedback.
    """
    i = state.intake
    consecutive = i.consecutive_malformed + 1
    note = MalformedLineNote(
        line_number=event.line_number,
        error=event.error,
        excerpt=event.content[:FEEDBACK_EXCERPT_CHARS],
    )
    feedback, omitted = (*i.feedback, note), i.feedback_omitted
    if len(feedback) > MAX_FEEDBACK_LINES:
        feedback, omitted = feedback[1:], omitted + 1
    intake = evolve(
        i,
        seen_topics=seen_with(i.seen_topics, MALFORMED_TOPIC),
        malformed_lines=i.malformed_lines + 1,
        consecutive_malformed=consecutive,
        feedback=feedback,
        feedback_omitted=omitted,
    )
    assert state.run is not None
    progress = state.progress
    if (
        consecutive >= state.run.budget.max_consecutive_malformed
        and progress.phase is not Phase.FINALIZING
    ):
        counted = evolve(state, intake=intake)
        return finalize(counted, TerminationReason.VALIDATION_FAILURE)
    return notify(state, intake)


def _read(state: PipelineState, event: EventsFileRead) -> PipelineState:
    """The events file was read further: a resumed run reads on from here."""
    i = state.intake
    if event.offset < i.events_offset or event.lines < i.events_lines:
        why = (
            f"the events file was read to byte {event.offset} (line {event.lines}), "
            f"before byte {i.events_offset} (line {i.events_lines}) read already"
        )
        return anomaly(state, event, why)
    return advance(state, intake=evolve(i, events_offset=event.offset, events_lines=event.lines))
