"""Judging a published topic by the run's loop policy (pure).

In order: the cancellation promise ends the run; a topic outside its hat's scope is not acted
on (recorded and noticed, nothing else); the stale-loop detector; the completion gate; a
question to a person; a blocked task and the thrash detector. Every judgement is recorded in
the state (counters and notices for the next prompt), so replaying the log judges again exactly
as the run did.
"""

from __future__ import annotations

import zlib
from datetime import timedelta
from typing import Any

from attrs import evolve

from pipeline.core.state import (
    Bounce,
    Intake,
    Ledger,
    Notice,
    PendingQuestion,
    Phase,
    PipelineState,
    Routing,
    Step,
    TerminationReason,
)
from pipeline.events import (
    CONTEXT_REFUSED_TOPIC,
    CONTEXT_TOPICS,
    HUMAN_INTERACT_TOPIC,
    TASK_ABANDONED_TOPIC,
    TASK_BLOCKED_TOPIC,
    TASK_COMPLETE_TOPIC,
    TASK_RESUME_TOPIC,
    TOPIC_NOT_ASKED_TOPIC,
    Count,
    Instant,
    Json,
    LoopPolicy,
    QuestionId,
    Role,
    TopicPublished,
    in_scope,
)
from pipeline.reducers._build import advance
from pipeline.reducers._claims import claim_accepted
from pipeline.reducers._escalation import bounced
from pipeline.reducers._notices import add_notice, seen_with
from pipeline.reducers._routing import back_to_last_hat, queued
from pipeline.reducers._transitions import finalize, start_development
from pipeline.reducers.context import agent_note, applied

__all__ = ["VALIDATION_FAILED", "gate_success", "judge_topic", "notify"]

VALIDATION_FAILED = "final validation: "
"""How ``last_error`` begins after a failed final check (``validation.py`` writes it)."""


def notify(
    state: PipelineState,
    intake: Intake,
    ledger: Ledger | None = None,
    routing: Routing | None = None,
) -> PipelineState:
    """The state after an event that owes the agent something in ``intake`` (a notice, or
    feedback on a malformed line). A task waiting to invoke its agent again (a retry) goes back
    to its prompt, so the very next prompt the agent reads carries it."""
    progress, agent = state.progress, state.agent
    # Not while the agent's output is still to be collected: a topology hat's topics come
    # before the end of its activation.
    if progress.step is Step.INVOKE and not agent.in_flight and not agent.awaiting_output:
        rewound = evolve(progress, step=Step.PROMPT)
        return advance(state, progress=rewound, intake=intake, ledger=ledger, routing=routing)
    return advance(state, intake=intake, ledger=ledger, routing=routing)


def judge_topic(state: PipelineState, event: TopicPublished) -> PipelineState:
    """Fold ``event``: count it, and act on it as the run's loop policy says."""
    run = state.run
    assert run is not None, "reduce lets topics into started runs only"
    policy = run.loop
    i = state.intake
    topic = event.topic
    if i.file_only and topic not in CONTEXT_TOPICS:
        return _not_asked(state, event)
    if topic == policy.cancellation_promise:
        return _cancel(state, _counted(i, topic))
    if topic in CONTEXT_TOPICS:
        return _context_note(state, event)
    publisher = i.publisher
    if policy.enforce_hat_scope and publisher is not None and topic != policy.completion_promise:
        scope = _scope(state, policy, publisher)
        if scope is not None and not in_scope(scope[1], topic):
            return _out_of_scope(state, event, scope[0])
    if policy.stale_repeats and topic != TASK_COMPLETE_TOPIC:
        who = "-" if publisher is None else publisher.value
        # A digest of the payload keeps the state small; crc32 is deterministic across
        # processes (unlike hash()) and cheap, and a false repeat needs N collisions in a row.
        signature = f"{topic}|{who}|{zlib.crc32(event.payload.text.encode()):08x}"
        repeats = i.repeats + 1 if signature == i.repeat_signature else 1
        intake = evolve(
            i,
            seen_topics=seen_with(i.seen_topics, topic),
            topics_published=i.topics_published + 1,
            consecutive_malformed=0,
            repeat_signature=signature,
            repeats=repeats,
        )
        if repeats >= policy.stale_repeats:
            why = (
                f"loop stale: '{topic}' was published {repeats} times in a row by the "
                f"{who} hat with the same payload"
            )
            earlier = state.ledger.last_error
            if earlier is not None and earlier.startswith(VALIDATION_FAILED):
                # A completion claimed again and again while the final check fails: the
                # check's failure (a test runner not installed, say) is what to act on.
                why = f"{why}; the last {earlier}"
            return _end(state, intake, TerminationReason.LOOP_STALE, why)
    else:
        intake = _counted(i, topic)
    if topic == policy.completion_promise:
        return _completion(state, intake, policy, event)
    if topic == HUMAN_INTERACT_TOPIC and policy.human_timeout_s is not None:
        return _question(state, intake, event, policy.human_timeout_s)
    if topic == TASK_BLOCKED_TOPIC:
        if intake.publisher is Role.DEVELOPER:
            # A bounce of the developer's work (its hat's ladder), abandoned or not.
            state = bounced(state, Bounce.BLOCKED)
        if policy.max_task_blocks:
            return _blocked(state, intake, policy, event)
    return advance(state, intake=intake, routing=queued(state, event))


def _scope(
    state: PipelineState, policy: LoopPolicy, publisher: Role
) -> tuple[str, tuple[str, ...]] | None:
    """The name and ``publishes`` of the hat that judges ``publisher``'s topics: the topology
    hat at work for a developer of a user's topology, else the role's hat (None: none)."""
    topology, working = policy.topology, state.routing.hat
    if topology is not None and working is not None and publisher is Role.DEVELOPER:
        hat = topology.hat(working)
        return None if hat is None else (hat.name, hat.publishes)
    role_hat = policy.hat(publisher)
    return None if role_hat is None else (role_hat.name, role_hat.publishes)


def _out_of_scope(state: PipelineState, event: TopicPublished, hat: str) -> PipelineState:
    """Not acted on at all: counted, noticed, and shown as ``<hat>.scope_violation``."""
    i = state.intake
    text = f"Attempted to publish '{event.topic}': {event.payload.text}"
    noted = _noted(
        i,
        f"{hat}.scope_violation",
        text,
        event,
        topics_published=i.topics_published + 1,
        consecutive_malformed=0,
        scope_violations=i.scope_violations + 1,
    )
    return notify(state, noted)


def _not_asked(state: PipelineState, event: TopicPublished) -> PipelineState:
    """A topic from a turn whose prompt asks for a file only: not acted on at all (not even a
    completion or cancellation promise: writing a commit message is no claim that the work is
    done), counted and noticed to its role's next prompt. A memory or task note, which steers
    nothing, is taken from such a turn as from any other."""
    i = state.intake
    text = f"'{event.topic}' was not taken: that prompt asked for a file only, not for topics"
    noted = _noted(
        i,
        TOPIC_NOT_ASKED_TOPIC,
        text,
        event,
        topics_published=i.topics_published + 1,
        consecutive_malformed=0,
    )
    return notify(state, noted)


def _context_note(state: PipelineState, event: TopicPublished) -> PipelineState:
    """An agent's memory or task note: applied at once and kept to be filed in the book, or
    refused with a notice saying why. Every hat may publish one; it wakes no hat and counts
    for no detector."""
    intake = _counted(state.intake, event.topic)
    note = agent_note(state, event)
    result = note if isinstance(note, str) else applied(state.context, note)
    if isinstance(note, str) or isinstance(result, str):
        why = note if isinstance(note, str) else str(result)
        text = f"'{event.topic}' was not taken: {why}"
        return notify(state, _noted(intake, CONTEXT_REFUSED_TOPIC, text, event))
    context = evolve(result, unfiled=(*result.unfiled, note))
    return advance(state, intake=intake, context=context)


def _noted(intake: Intake, topic: str, text: str, event: TopicPublished, **changes: Any) -> Intake:
    """``intake`` owing the hat that published ``event`` a notice on ``topic`` about its line
    (with ``changes``, its other fields the event sets: one record built)."""
    line = Count(event.line_number)
    notice = Notice(topic=topic, text=text, line_number=line, role=intake.publisher)
    return add_notice(intake, notice, **changes)


def _counted(i: Intake, topic: str) -> Intake:
    return evolve(
        i,
        seen_topics=seen_with(i.seen_topics, topic),
        topics_published=i.topics_published + 1,
        consecutive_malformed=0,
    )


def _end(
    state: PipelineState, intake: Intake, reason: TerminationReason, why: str
) -> PipelineState:
    """End the run with ``reason`` (a run already finalizing keeps the reason it has)."""
    ledger = evolve(state.ledger, last_error=why)
    if state.progress.phase is Phase.FINALIZING:
        return advance(state, intake=intake, ledger=ledger)
    return finalize(evolve(state, intake=intake), reason, ledger)


def _cancel(state: PipelineState, intake: Intake) -> PipelineState:
    """The cancellation promise ends the run cleanly, whatever else is going on."""
    progress = state.progress
    if progress.phase is Phase.FINALIZING:
        cancelled = evolve(progress, termination=TerminationReason.CANCELLED)
        return advance(state, progress=cancelled, intake=intake)
    return finalize(evolve(state, intake=intake), TerminationReason.CANCELLED)


def _completion(
    state: PipelineState, intake: Intake, policy: LoopPolicy, event: TopicPublished
) -> PipelineState:
    """The completion gate: accepted only once every required event has been seen (and,
    with ``[context] finish_tasks``, every task is done)."""
    missing = _missing(policy, intake)
    unfinished = _unfinished(state, policy)
    if missing or unfinished:
        why = f"required events not yet seen: {', '.join(missing)}" if missing else ""
        todo = "Publish them"
        if unfinished:
            why += "; " if why else ""
            why += f"tasks not done: {', '.join(unfinished)} (`ralph task done ID`)"
            todo = "Publish them and finish them" if missing else "Finish them"
        text = (
            f"Completion refused: {why}. "
            f"{todo} before '{event.topic}' again; {_how_to_cancel(policy)}."
        )
        refusals = intake.completion_refusals + 1
        refused = _noted(intake, TASK_RESUME_TOPIC, text, event, completion_refusals=refusals)
        return notify(state, refused)
    return claim_accepted(state, evolve(intake, completion_claimed=True))


def _missing(policy: LoopPolicy, intake: Intake) -> list[str]:
    """The required events not seen so far in the run."""
    return [t for t in policy.required_events if t not in intake.seen_topics]


_MAX_NAMED_TASKS = 10
"""The most unfinished tasks a refusal names (then how many more)."""


def _unfinished(state: PipelineState, policy: LoopPolicy) -> list[str]:
    """The tasks not done, when the policy makes completion wait for them."""
    if policy.context is None or not policy.context.finish_tasks:
        return []
    ids = [task.task_id for task in state.context.open_tasks()]
    if len(ids) > _MAX_NAMED_TASKS:
        ids = [*ids[:_MAX_NAMED_TASKS], f"{len(ids) - _MAX_NAMED_TASKS} more"]
    return ids


def _how_to_cancel(policy: LoopPolicy) -> str:
    cancel = policy.cancellation_promise
    return (
        f"or publish '{cancel}' to cancel the run"
        if cancel
        else "no cancellation topic is configured"
    )


def gate_success(state: PipelineState) -> PipelineState | None:
    """The completion gate on the way every run succeeds (final validation passed), whether
    an agent claimed completion or the developer and a clean review got there: None when
    every required event was seen (and, with ``[context] finish_tasks``, every task is
    done), else the refusal: a ``task.resume`` notice to the
    developer listing what is missing, and development again (until the iteration budget
    ends the run as ``max_iterations``, never as ``completed``)."""
    run = state.run
    if run is None:
        return None
    policy, intake = run.loop, state.intake
    missing = _missing(policy, intake)
    unfinished = _unfinished(state, policy)
    if not missing and not unfinished:
        return None
    if missing:
        listed = ", ".join(missing)
        text = (
            f"Completion refused: the work passed validation, but required events were not "
            f"seen: {listed}. The run cannot succeed without them; publish them, "
            f"{_how_to_cancel(policy)}."
        )
        why = f"required events not seen: {listed}"
    else:
        listed = ", ".join(unfinished)
        text = (
            f"Completion refused: the work passed validation, but tasks are not done: "
            f"{listed}. Finish them (`ralph task done ID`), {_how_to_cancel(policy)}."
        )
        why = f"tasks not done: {listed}"
    # The developer does the work that is missing (asking a person, say): it hears of it.
    refused = add_notice(
        intake,
        Notice(topic=TASK_RESUME_TOPIC, text=text, role=Role.DEVELOPER),
        completion_refusals=intake.completion_refusals + 1,
        completion_claimed=False,
    )
    ledger = evolve(state.ledger, last_error=why)
    routing = back_to_last_hat(state.routing, TASK_RESUME_TOPIC, Json.of(text))
    return start_development(evolve(state, intake=refused, routing=routing), ledger=ledger)


def _text_of(event: TopicPublished, key: str) -> str:
    """The payload's ``key`` when it is an object with that string field, the payload itself
    when it is a string, else its JSON text."""
    value = event.payload.value
    if isinstance(value, dict):
        field = value.get(key)
        if isinstance(field, str):
            return field
    if isinstance(value, str):
        return value
    return event.payload.text


def _question(
    state: PipelineState, intake: Intake, event: TopicPublished, timeout_s: int
) -> PipelineState:
    """A question to a person: the run waits for the answer until the deadline."""
    question = _text_of(event, "question")
    ledger = state.ledger
    if ledger.pending_question is not None:
        text = (
            f"Question not asked: '{ledger.pending_question.question}' is still waiting for "
            "an answer; ask again after it is answered."
        )
        return notify(state, _noted(intake, HUMAN_INTERACT_TOPIC, text, event))
    deadline = Instant(event.at + timedelta(seconds=timeout_s))
    question_id = QuestionId(f"line-{event.line_number}")
    pending = PendingQuestion(
        question_id=question_id, question=question, deadline=deadline, asked_by=intake.publisher
    )
    return advance(state, intake=intake, ledger=evolve(ledger, pending_question=pending))


def _blocked(
    state: PipelineState, intake: Intake, policy: LoopPolicy, event: TopicPublished
) -> PipelineState:
    """Count a blocked task; abandon it after too many blocks, and end the run after too many
    abandonments."""
    task = _text_of(event, "task")
    counts = dict(intake.blocked)
    blocks = counts.pop(task, 0) + 1
    routing = queued(state, event)
    if blocks < policy.max_task_blocks:
        counts[task] = blocks
        blocked = evolve(intake, blocked=tuple(sorted(counts.items())))
        return advance(state, intake=blocked, routing=routing)
    abandoned = intake.abandoned_tasks + 1
    text = f"Task '{task}' was reported blocked {blocks} times and is abandoned: move on."
    intake = _noted(
        intake,
        TASK_ABANDONED_TOPIC,
        text,
        event,
        blocked=tuple(sorted(counts.items())),
        abandoned_tasks=abandoned,
    )
    if policy.max_abandoned_tasks and abandoned >= policy.max_abandoned_tasks:
        why = f"loop thrashing: {abandoned} tasks abandoned, the last '{task}'"
        return _end(state, intake, TerminationReason.LOOP_THRASHING, why)
    return notify(state, intake, routing=routing)
