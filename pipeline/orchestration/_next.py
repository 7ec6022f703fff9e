"""``next_effect``: what to do next, decided from the state alone (pure).

Priorities: a lifecycle hook due after the last invocation first, then a due checkpoint (so
that every transition is durable before work goes on), then termination (after the run's
``run_end`` hooks), then a hook due before the step, then a pending human question, then the
current phase's step.
"""

from __future__ import annotations

from typing import assert_never

from pipeline.core import effects as fx
from pipeline.core.state import (
    FILE_ONLY_PROMPTS,
    Phase,
    PipelineState,
    ResponseCheck,
    Step,
    TerminationReason,
    agents_for,
    correcting,
    escalated_model,
    notices_for,
    response_schema_for,
    task_prompt_kind,
    working_hat,
)
from pipeline.events import (
    HUMAN_INTERACT_TOPIC,
    AgentName,
    Count,
    DurationMs,
    LogPosition,
    Ordinal,
    PromptKind,
    Role,
    ScreenScope,
)
from pipeline.orchestration._context import prompt_context
from pipeline.orchestration._hooks import hooked
from pipeline.orchestration._pinning import pinned_to

__all__ = [
    "FORMATTING_CORRECTION_EXHAUSTED",
    "PROVIDER_LIMIT",
    "effect_id",
    "next_effect",
    "next_step",
]


def effect_id(state: PipelineState) -> fx.EffectId:
    """The id of the effect decided from ``state``: ``<run id>:<facts before it>``.

    Resumptions (and the facts of the world a resume records), interruptions, the
    checkpoints interruptions make and salvages are not counted, so an effect that was
    carried out but whose facts were never recorded (the process died, a signal abandoned
    its handler, or damage lost them) is asked for again after resuming under the same id,
    and its handler can recognise work it already did.
    """
    run_id = "unstarted" if state.run is None else state.run.run_id
    ledger = state.ledger
    uncounted = (
        ledger.resumes + ledger.interruption_facts + ledger.resume_facts + len(ledger.salvages)
    )
    return fx.EffectId(f"{run_id}:{state.sequence - uncounted}")


def next_effect(state: PipelineState) -> fx.Effect:
    """The one effect the run needs next; total over every state. A lifecycle hook due
    before the step (or after the last invocation, or at the run's end) comes first."""
    return hooked(state, next_step(state))


def next_step(state: PipelineState) -> fx.Effect:
    """The effect of the run's step, hooks aside: what ``next_effect`` asks for once no
    lifecycle hook is due (a hook due before it has its effect id)."""
    eid = effect_id(state)
    progress, ledger = state.progress, state.ledger
    phase = progress.phase
    due = state.checkpoints.due
    if due is not None and phase is not Phase.NOT_STARTED:
        return fx.SaveCheckpoint(effect_id=eid, trigger=due, sequence=LogPosition(state.sequence))
    if phase is Phase.COMPLETE or phase is Phase.INTERRUPTED:
        return fx.Terminate(effect_id=eid, reason=progress.termination or TerminationReason.STOPPED)
    if phase is Phase.NOT_STARTED:
        return fx.StartRun(effect_id=eid)
    if ledger.pending_question is not None:
        question = ledger.pending_question
        asked = question.question_id if question.asked else None
        return fx.WaitForHuman(
            effect_id=eid, question_id=asked, deadline=question.deadline, question=question.question
        )
    step = progress.step
    match step:
        case Step.BEGIN:
            return _begin(state, eid)
        case Step.PROMPT:
            return _prompt(state, eid)
        case Step.INVOKE:
            return _invoke(state, eid)
        case Step.COMMIT:
            message = ledger.pending_commit_message or _default_message(state)
            # Right after a resume, the commit may be the one the dead process was making.
            just_resumed = ledger.last_resume_sequence == state.sequence
            spend = ledger.spend
            return fx.CreateCommit(
                effect_id=eid,
                message=message,
                may_exist=just_resumed,
                spent=spend.since_commit,
                models=spend.models_since_commit,
            )
        case Step.REBASE:
            assert state.run is not None
            if state.run.rebase_onto is None:
                # Only a run configured to rebase gets here; without a target, skip past it.
                return fx.AbortRebase(effect_id=eid)
            return fx.Rebase(effect_id=eid, onto=state.run.rebase_onto)
        case Step.ABORT_REBASE:
            return fx.AbortRebase(effect_id=eid)
        case Step.GATE:
            return _gate(state, eid)
        case Step.VALIDATE:
            return fx.ValidateFinalState(effect_id=eid)
        case Step.RESTORE:
            protected = ledger.protected_prompt
            if protected is None:
                return fx.RestorePromptPermissions(effect_id=eid, path=None, mode=None)
            return fx.RestorePromptPermissions(
                effect_id=eid, path=protected.path, mode=protected.original_mode
            )
        case Step.COMPLETE:
            return fx.CompleteRun(
                effect_id=eid, reason=progress.termination or TerminationReason.COMPLETED
            )
        case Step.TRIGGER:
            role = None if progress.dev_fix is None else progress.dev_fix.role
            if role is None:
                return fx.Terminate(effect_id=eid, reason=TerminationReason.STOPPED)
            return fx.TriggerDevFix(
                effect_id=eid, failed_role=role, reason=ledger.last_error or "agent chain exhausted"
            )
        case Step.MARKER:
            fix = progress.dev_fix
            succeeded = fix is not None and fix.success
            status = "dev_fix_succeeded" if succeeded else "dev_fix_failed"
            role = None if fix is None else fix.role
            reason = f"agent chain exhausted for {role.value if role else 'unknown'} role"
            return fx.WriteCompletionMarker(effect_id=eid, status=status, reason=reason)
        case Step.DONE:
            return fx.Terminate(
                effect_id=eid, reason=progress.termination or TerminationReason.STOPPED
            )
        case _:
            assert_never(step)


def _gate(state: PipelineState, eid: fx.EffectId) -> fx.Effect:
    """The screen of the run's changes when it is still due, else the head gate of the round
    under way, with its command as the run recorded it."""
    round_, run = state.gating.round, state.run
    if round_ is not None and round_.screen_due and run is not None:
        loop = run.loop
        # A task's screen looks for tampering only; the postconditions hold for the run's
        # finished work.
        task = round_.scope is ScreenScope.ITERATION
        return fx.ScreenChanges(
            effect_id=eid,
            scope=round_.scope,
            base=state.gating.work_base if task else state.gating.run_base,
            tamper=loop.tamper,
            postconditions=None if task else loop.postconditions,
            gates=loop.gates,
        )
    head = round_.pending[0] if round_ is not None and round_.pending else None
    spec = None if head is None or run is None else run.loop.gate(head[0])
    if head is None or spec is None:
        # Only a round with gates puts a run at this step; this keeps next_effect total.
        reason = state.progress.termination or TerminationReason.STOPPED
        return fx.Terminate(effect_id=eid, reason=reason)
    pin = pinned_to(state)
    tamper = None if run is None else run.loop.tamper
    return fx.RunGate(
        effect_id=eid,
        gate=spec.name,
        boundary=head[1],
        argv=spec.argv,
        timeout_s=spec.timeout_s,
        inactivity_timeout_s=spec.inactivity_timeout_s,
        pin_base=pin,
        test_paths=() if pin is None or tamper is None else tamper.test_paths,
    )


def _begin(state: PipelineState, eid: fx.EffectId) -> fx.Effect:
    progress, trigger = state.progress, state.routing.trigger
    if progress.phase in fx.BEGUN_PHASES:
        return fx.Begin(
            effect_id=eid,
            phase=progress.phase,
            fixing=progress.fixing,
            iteration=Count(progress.iteration),
            review_pass=Count(progress.review_pass),
            hat=state.routing.hat,
            topic=None if trigger is None else trigger.topic,
        )
    # No other phase begins with a start fact; no reducer puts one at BEGIN.
    return fx.Terminate(effect_id=eid, reason=progress.termination or TerminationReason.STOPPED)


def _prompt(state: PipelineState, eid: fx.EffectId) -> fx.Effect:
    progress = state.progress
    kind = task_prompt_kind(state)
    role = progress.role
    if kind is None or role is None:
        return fx.Terminate(effect_id=eid, reason=progress.termination or TerminationReason.STOPPED)
    working = working_hat(state, role)
    hat = None if working is None else working.name
    correcting_now = kind is PromptKind.FORMAT_CORRECTION
    publishing = _publishing(state, kind, role)
    return fx.MaterializePrompt(
        effect_id=eid,
        kind=kind,
        role=role,
        iteration=Count(progress.iteration),
        review_pass=Count(progress.review_pass),
        last_error=state.ledger.last_error,
        # A correction shows only the malformed response: feedback and notices wait.
        feedback=() if correcting_now else state.intake.feedback,
        feedback_omitted=Count(0 if correcting_now else state.intake.feedback_omitted),
        notices=() if correcting_now else notices_for(state.intake.notices, role, hat),
        response_schema=response_schema_for(state, role),
        correction=correcting(state),
        publishing=publishing,
        hat=hat,
        trigger=None if working is None else state.routing.trigger,
        context=None if publishing is None else prompt_context(state, role, hat),
        standing=_standing(state),
    )


def _standing(state: PipelineState) -> fx.Standing | None:
    """Where the run stands, as ``ralph status`` says it: its budget and known spend."""
    run, progress = state.run, state.progress
    if run is None:
        return None
    budget, spent = run.budget, state.ledger.spend.total
    return fx.Standing(
        phase=progress.phase.value,
        step=progress.step.value,
        iteration=progress.iteration,
        max_iterations=budget.max_iterations,
        review_pass=progress.review_pass,
        # A topology routes between hats and counts no review pass.
        max_review_passes=None if run.loop.topology is not None else budget.max_review_passes,
        cost_usd=spent.cost_usd,
        max_cost_usd=budget.max_cost_usd,
        unknown_cost=spent.unknown_cost > 0,
    )


def _publishing(state: PipelineState, kind: PromptKind, role: Role) -> fx.Publishing | None:
    """What the prompt says about publishing: every working prompt, none for a commit message
    or a formatting correction (they answer in a file and nothing else)."""
    run = state.run
    if run is None or kind in FILE_ONLY_PROMPTS:
        return None
    policy = run.loop
    working = working_hat(state, role)
    hat = policy.hat(role)
    publishes = working.publishes if working is not None else () if hat is None else hat.publishes
    seen = state.intake.seen_topics
    promise = policy.completion_promise
    return fx.Publishing(
        publishes=publishes,
        enforced=policy.enforce_hat_scope,
        completion_promise=promise,
        cancellation_promise=policy.cancellation_promise,
        required_missing=tuple(topic for topic in policy.required_events if topic not in seen)
        if promise is not None
        else (),
        human_topic=HUMAN_INTERACT_TOPIC if policy.human_timeout_s is not None else None,
    )


def _invoke(state: PipelineState, eid: fx.EffectId) -> fx.Effect:
    progress, agent, run = state.progress, state.agent, state.run
    role = progress.role
    kind = task_prompt_kind(state)
    if role is None or kind is None or run is None:
        return fx.Terminate(effect_id=eid, reason=progress.termination or TerminationReason.STOPPED)
    check = state.ledger.response
    if check is not None and not check.valid and kind is not PromptKind.FORMAT_CORRECTION:
        # Every correction turn was used: a person has to look.
        return fx.RequireHuman(
            effect_id=eid, reason=FORMATTING_CORRECTION_EXHAUSTED, detail=_exhausted(check)
        )
    if state.ledger.window_full is not None:
        return fx.RequireHuman(
            effect_id=eid, reason=PROVIDER_LIMIT, detail=state.ledger.window_full
        )
    if agent.limit_until is not None:
        if agent.limit_stop:
            detail = state.ledger.last_error or f"a provider limit until {agent.limit_until}"
            return fx.RequireHuman(effect_id=eid, reason=PROVIDER_LIMIT, detail=detail)
        return fx.WaitForLimitReset(effect_id=eid, role=role, until=agent.limit_until)
    if agent.backoff_ceiling_ms is not None:
        return fx.BackOff(effect_id=eid, role=role, ceiling_ms=DurationMs(agent.backoff_ceiling_ms))
    chain = agents_for(state, role)
    position = agent.chain_position
    if position >= len(chain):
        # Reducers move an exhausted chain to dev-fix; this keeps next_effect total regardless.
        return fx.Terminate(effect_id=eid, reason=TerminationReason.AGENT_CHAIN_EXHAUSTED)
    if check is not None and check.valid:
        # No correction is due, so the task's prompt kind is its report's kind.
        return fx.CollectReport(
            effect_id=eid,
            role=role,
            agent=chain[position],
            prompt_kind=kind,
            iteration=Count(progress.iteration),
            review_pass=Count(progress.review_pass),
        )
    # A correction turn is the attempt it corrects answering again, not an attempt of its own:
    # the cursor counts every invocation, so the turns taken so far are taken off.
    turns = check.failures if check is not None and kind is PromptKind.FORMAT_CORRECTION else 0
    return fx.InvokeAgent(
        effect_id=eid,
        role=role,
        agent=chain[position],
        attempt=Ordinal(max(1, agent.attempt + 1 - turns)),
        prompt_kind=kind,
        iteration=Count(progress.iteration),
        review_pass=Count(progress.review_pass),
        events_offset=Count(state.intake.events_offset),
        events_lines=Count(state.intake.events_lines),
        response_schema=response_schema_for(state, role),
        hat=state.routing.hat if working_hat(state, role) is not None else None,
        model=escalated_model(state, role) or _forked_model(state, chain[position]),
    )


FORMATTING_CORRECTION_EXHAUSTED = "FORMATTING_CORRECTION_EXHAUSTED"
"""The reason recorded when an agent's response stayed malformed after every correction."""
PROVIDER_LIMIT = "PROVIDER_LIMIT"
"""Why a run stopped for a person: its provider limited it until a reset it does not wait
for, or reported a usage window past ``stop_at_utilization`` (``[limits]``); ``ralph resume``
once the window has reset."""


def _exhausted(check: ResponseCheck) -> str:
    """What a person needs to see: how many answers, the last one, and what is wrong with it."""
    return (
        f"{check.failures} malformed structured responses in a row (the original and "
        f"{check.failures - 1} correction(s)); violations: {'; '.join(check.violations)}; "
        f"last response: {check.raw_response!r}"
    )


def _default_message(state: PipelineState) -> str:
    progress = state.progress
    if progress.after_commit is Phase.REVIEW and progress.review_pass:
        return f"ralph: fixes from review pass {progress.review_pass}"
    return f"ralph: development iteration {progress.iteration}"


def _forked_model(state: PipelineState, agent: AgentName) -> str | None:
    """The model a fork asks ``agent`` for (``ralph fork --model``): every agent's when the
    fork named no agent, else only the fork's agent's, so that a fallback runs its own model.
    A ladder's rung above the hat's own model outranks it (the caller asks the ladder first)."""
    run = state.run
    if run is None or run.model is None:
        return None
    return run.model if run.agent is None or run.agent == agent else None
