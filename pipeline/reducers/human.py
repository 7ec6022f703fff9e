"""Reducer for human-in-the-loop facts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Notice, PendingQuestion, PipelineState, Step, TerminationReason
from pipeline.events import (
    HUMAN_GUIDANCE_TOPIC,
    HUMAN_RESPONSE_TOPIC,
    HUMAN_TIMEOUT_TOPIC,
    GuidanceGiven,
    HumanEvent,
    HumanInterventionRequired,
    HumanQuestionAsked,
    HumanResponseReceived,
    HumanTimedOut,
    Role,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._notices import add_notice
from pipeline.reducers._topics import notify
from pipeline.reducers._transitions import interrupt

__all__ = ["reduce_human"]


def reduce_human(state: PipelineState, event: HumanEvent) -> PipelineState:
    """Fold one human fact: a question is waited for; an answer or a timeout ends the wait."""
    ledger = state.ledger
    pending = ledger.pending_question
    match event:
        case HumanQuestionAsked():
            if pending is not None and pending.asked:
                return anomaly(state, event, f"question {pending.question_id!r} is pending")
            # The question an agent published gets its id; one asked from outside is new.
            asked_by = None if pending is None else pending.asked_by
            question = PendingQuestion(
                question_id=event.question_id,
                question=event.question,
                deadline=event.deadline,
                asked_by=asked_by,
                asked=True,
            )
            return advance(state, ledger=evolve(ledger, pending_question=question))
        case HumanResponseReceived():
            if pending is None or pending.question_id != event.question_id:
                return anomaly(state, event, f"question {event.question_id!r} is not pending")
            answered = evolve(ledger, pending_question=None, last_human_answer=event.text)
            # The answer goes to the agent in its next prompt.
            notice = Notice(topic=HUMAN_RESPONSE_TOPIC, text=event.text, role=pending.asked_by)
            return notify(state, add_notice(state.intake, notice), answered)
        case HumanTimedOut():
            if pending is None or pending.question_id != event.question_id:
                return anomaly(state, event, f"question {event.question_id!r} is not pending")
            timed_out = evolve(
                ledger,
                pending_question=None,
                last_error=f"no answer to {pending.question!r} by {pending.deadline.isoformat()}",
            )
            # Never a silent continue: the agent is told nobody answered.
            notice = Notice(
                topic=HUMAN_TIMEOUT_TOPIC,
                text=_timeout_text(state, pending),
                role=pending.asked_by,
            )
            return notify(state, add_notice(state.intake, notice), timed_out)
        case GuidanceGiven():
            if event.number <= ledger.guidance_seen:
                return anomaly(state, event, f"guidance {event.number} was taken in already")
            role, hat = _guided(state, event.hat)
            notice = Notice(topic=HUMAN_GUIDANCE_TOPIC, text=event.text, role=role, hat=hat)
            guided = evolve(ledger, guidance_seen=event.number)
            return notify(state, add_notice(state.intake, notice), guided)
        case HumanInterventionRequired():
            progress = state.progress
            needed = evolve(ledger, last_error=f"{event.reason}: {event.detail}", window_full=None)
            # After the person acted, an agent's task starts again from its prompt.
            step = Step.PROMPT if progress.step is Step.INVOKE else progress.step
            # A provider limit the run stopped for is the person's to wait out now.
            cleared = evolve(state, agent=evolve(state.agent, limit_until=None, limit_stop=False))
            return interrupt(
                cleared, TerminationReason.HUMAN_INTERVENTION_REQUIRED, progress.phase, step, needed
            )
        case _:
            assert_never(event)


def _timeout_text(state: PipelineState, pending: PendingQuestion) -> str:
    timeout = None if state.run is None else state.run.loop.human_timeout_s
    waited = (
        f"{timeout}s" if timeout is not None else f"the deadline {pending.deadline.isoformat()}"
    )
    return f"No response after {waited}. Original question: {pending.question}"


def _guided(state: PipelineState, hat: str | None) -> tuple[Role | None, str | None]:
    """The role, and the topology hat, that guidance for ``hat`` goes to: a role's hat by its
    name or the role's, a topology's hat as the developer's work; None (or a name the run
    does not know): whichever hat works next."""
    if hat is None or state.run is None:
        return None, None
    loop = state.run.loop
    for worn in loop.hats:
        if hat in (worn.name, worn.role.value):
            return worn.role, None
    if loop.topology is not None and loop.topology.hat(hat) is not None:
        return Role.DEVELOPER, hat
    known = {role.value: role for role in Role}
    return known.get(hat), None
