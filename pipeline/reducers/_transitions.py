"""Phase transitions and the agent-chain policy, shared by the category reducers (pure).

Each function here ends the handling of one event: it returns the next state with the sequence
moved on (through :func:`~pipeline.reducers._build.advance`).
"""

from __future__ import annotations

import re
from typing import Final

from attrs import evolve

from pipeline.core.state import (
    AgentCursor,
    Checkpoints,
    DevFixTask,
    Ledger,
    Phase,
    PipelineState,
    Progress,
    ResumePoint,
    Step,
    TerminationReason,
    agents_for,
    reviews_claims,
)
from pipeline.events import CheckpointTrigger, Role
from pipeline.reducers._build import advance
from pipeline.reducers._rounds import final_round, task_round
from pipeline.reducers._routing import next_activation
from pipeline.reducers._spend import spent_budget

__all__ = [
    "after_commit",
    "agent_failed",
    "backoff_ceiling",
    "chain_exhausted",
    "finalize",
    "fixed",
    "interrupt",
    "keep_wait",
    "new_task",
    "start_development",
    "start_review",
    "start_validation",
    "stop_when_spent",
    "task_done",
    "task_passed",
    "transition",
]


_FRESH = AgentCursor()

LOG_NAMED: Final = re.compile(r" \(see [^()]*\)")
"""The log file a failure message names (`` (see .ralph/...)``), which differs per attempt."""


def new_task(agent: AgentCursor) -> AgentCursor:
    """The cursor for a new agent task: every role starts again at its preferred agent.

    A fallback lasts for the task that needed it, not for the rest of the run: an agent that
    was rate limited an hour ago deserves another try, and a long run must not drain its
    chains one rare failure at a time.
    """
    # Cursors are immutable, so every new task can share one (no construction per task).
    return _FRESH


def keep_wait(cursor: AgentCursor, before: AgentCursor) -> AgentCursor:
    """``cursor`` (a new task's) still waiting for the provider limit's reset ``before``
    waited for: an interruption and its resumption do not end the wait, its deadline stays."""
    if before.limit_until is None:
        return cursor
    return evolve(cursor, limit_until=before.limit_until)


def transition(
    state: PipelineState,
    progress: Progress,
    trigger: CheckpointTrigger | None = CheckpointTrigger.PHASE,
    ledger: Ledger | None = None,
    agent: AgentCursor | None = None,
) -> PipelineState:
    """Move to ``progress`` with a new agent task (its cursor ``agent``, by default a fresh one),
    asking for a checkpoint by ``trigger``.

    A task for an agent does not begin once a spend limit is reached: the run finalizes as
    ``max_cost`` instead (see ``_spend``).
    """
    if progress.role is not None:
        spent = stop_when_spent(state, ledger)
        if spent is not None:
            return spent
    checkpoints = state.checkpoints
    if trigger is not None:
        checkpoints = Checkpoints(
            due=trigger, count=checkpoints.count, last_sequence=checkpoints.last_sequence
        )
    judged = state.ledger if ledger is None else ledger
    if judged.response is not None:
        # A structured response belongs to its task; the next task starts without one.
        ledger = evolve(judged, response=None)
    return advance(
        state,
        progress=progress,
        agent=new_task(state.agent) if agent is None else agent,
        ledger=ledger,
        checkpoints=checkpoints,
    )


def stop_when_spent(
    state: PipelineState, ledger: Ledger | None = None, progress: Progress | None = None
) -> PipelineState | None:
    """The run finalizing as ``max_cost`` when a spend limit is reached (judged with
    ``ledger``, else the state's), else None; for a point where an agent would start.
    ``progress``: the run is seen at that point (the state is rebuilt with it only when the
    run does stop, not on every check)."""
    run = state.run
    if run is None or not run.budget.limits_spend:
        return None
    judged = state.ledger if ledger is None else ledger
    why = spent_budget(run.budget, judged.spend)
    if why is None:
        return None
    seen = state if progress is None else advance_view(state, progress)
    return finalize(
        seen, TerminationReason.MAX_COST, evolve(judged, last_error=f"spend budget: {why}")
    )


def finalize(
    state: PipelineState, reason: TerminationReason, ledger: Ledger | None = None
) -> PipelineState:
    """Begin finalization; the run will end with ``reason``."""
    progress = evolve(state.progress, phase=Phase.FINALIZING, step=Step.BEGIN, termination=reason)
    return transition(state, progress, CheckpointTrigger.PHASE, ledger)


def interrupt(
    state: PipelineState,
    reason: TerminationReason,
    resume_phase: Phase,
    resume_step: Step,
    ledger: Ledger | None = None,
) -> PipelineState:
    """Stop the run resumably: it will go on from ``resume_phase`` at ``resume_step`` (still
    waiting, when it waited, for its provider limit's reset)."""
    progress = evolve(
        state.progress,
        phase=Phase.INTERRUPTED,
        step=Step.DONE,
        termination=reason,
        resume=ResumePoint(
            phase=resume_phase,
            step=resume_step,
            # Finalization already knows how the run ends; a resume must not forget it.
            termination=state.progress.termination,
        ),
    )
    cursor = keep_wait(new_task(state.agent), state.agent)
    return transition(state, progress, CheckpointTrigger.INTERRUPTION, ledger, cursor)


def start_development(
    state: PipelineState,
    progress: Progress | None = None,
    ledger: Ledger | None = None,
    trigger: CheckpointTrigger = CheckpointTrigger.PHASE,
) -> PipelineState:
    """Begin the next development iteration, or finalize when the iteration budget is spent."""
    assert state.run is not None, "development needs a started run"
    base = state.progress if progress is None else progress
    if state.intake.completion_claimed:
        # An accepted claim ends development: review it, or validate.
        onward = start_review if reviews_claims(state) else start_validation
        return onward(state, base, ledger)
    iteration = base.iteration + 1
    if iteration > state.run.budget.max_iterations:
        return finalize(advance_view(state, base), TerminationReason.MAX_ITERATIONS, ledger)
    topology = state.run.loop.topology
    if topology is not None:
        # A spent budget ends the run before a hat is woken: no activation is counted then.
        spent = stop_when_spent(state, ledger, base)
        if spent is not None:
            return spent
        route = next_activation(state, topology)
        state = evolve(state, routing=route.routing, intake=route.intake)
        if not route.woke:
            judged = state.ledger if ledger is None else ledger
            why = "workflow stalled: no topic waits for a hat" + (
                f" after hat '{route.routing.hat}', which has no default_publishes"
                if route.routing.hat is not None
                else ""
            )
            return finalize(
                advance_view(state, base),
                TerminationReason.WORKFLOW_STALLED,
                evolve(judged, last_error=why),
            )
    next_progress = evolve(
        base,
        phase=Phase.DEVELOPMENT,
        step=Step.BEGIN,
        iteration=iteration,
        fixing=False,
        after_commit=None,
    )
    return transition(state, next_progress, trigger, ledger)


def advance_view(state: PipelineState, progress: Progress) -> PipelineState:
    """``state`` seen with ``progress`` but the same sequence (to chain into another transition)."""
    return evolve(state, progress=progress)


def start_review(
    state: PipelineState, progress: Progress | None = None, ledger: Ledger | None = None
) -> PipelineState:
    """Begin the next review pass, or go to final validation when the review budget is spent."""
    assert state.run is not None, "review needs a started run"
    base = state.progress if progress is None else progress
    if state.intake.completion_claimed and not reviews_claims(state):
        return start_validation(state, base, ledger)
    review_pass = base.review_pass + 1
    if review_pass > state.run.budget.max_review_passes:
        return start_validation(state, base, ledger)
    next_progress = evolve(
        base,
        phase=Phase.REVIEW,
        step=Step.BEGIN,
        review_pass=review_pass,
        fixing=False,
        after_commit=None,
    )
    return transition(state, next_progress, CheckpointTrigger.PHASE, ledger)


def start_validation(
    state: PipelineState, progress: Progress | None = None, ledger: Ledger | None = None
) -> PipelineState:
    """Begin final validation: its gates first (``_gates``), when any applies, then the
    final check."""
    base = state.progress if progress is None else progress
    round_ = final_round(state)
    step = Step.VALIDATE if round_ is None else Step.GATE
    next_progress = evolve(
        base, phase=Phase.FINAL_VALIDATION, step=step, fixing=False, after_commit=None
    )
    if round_ is not None:
        state = evolve(state, gating=evolve(state.gating, round=round_))
    return transition(state, next_progress, CheckpointTrigger.PHASE, ledger)


def task_done(state: PipelineState, after: Phase | None) -> PipelineState:
    """A developer task did work: its round of gates first, when one applies (``_gates``),
    then its commit and ``after``; ``after`` None (a read-only workflow): the next iteration.

    The progress still counts the failed iterations before this one: a round that blocks
    counts one more, a round that passes (or none) clears them.
    """
    base = state.progress
    round_ = task_round(state, after)
    if round_ is not None:
        # No checkpoint here: the round's end asks for one, as its commit always has.
        gating = evolve(state.gating, round=round_)
        return advance(
            state, progress=evolve(base, step=Step.GATE, after_commit=after), gating=gating
        )
    return task_passed(state, after, base)


def task_passed(state: PipelineState, after: Phase | None, progress: Progress) -> PipelineState:
    """A developer task's work holds up: commit it and go on to ``after``, or (None, a
    read-only workflow) begin the next iteration."""
    if after is None:
        counted = evolve(progress, consecutive_failed_iterations=0)
        return start_development(state, counted, trigger=CheckpointTrigger.ITERATION)
    # One record for the commit's progress: this runs once per iteration of every run.
    committing = evolve(
        progress,
        consecutive_failed_iterations=0,
        phase=Phase.COMMIT_MESSAGE,
        step=Step.PROMPT,
        after_commit=after,
    )
    return transition(state, committing, CheckpointTrigger.ITERATION)


def after_commit(state: PipelineState, ledger: Ledger | None = None) -> PipelineState:
    """Go where the run was heading when it stopped to commit."""
    target = state.progress.after_commit
    if target is Phase.DEVELOPMENT:
        return start_development(state, ledger=ledger)
    if target is Phase.REVIEW:
        return start_review(state, ledger=ledger)
    return start_validation(state, ledger=ledger)


def backoff_ceiling(base_ms: int, cap_ms: int, retries: int) -> int:
    """The exponential backoff window before retry number ``retries`` (1-based), capped."""
    if base_ms == 0:
        return 0
    # Past 62 doublings any positive base exceeds every cap a 64-bit field can hold.
    if retries > 62:
        return cap_ms
    return min(cap_ms, base_ms << (retries - 1))


def agent_failed(
    state: PipelineState, retriable: bool, message: str, *, configuration: bool = False
) -> PipelineState:
    """The active agent's attempt failed: retry it, fall back along the chain, or give up.

    A retriable failure with retries left backs off and retries the same agent; otherwise the
    next agent in the role's chain takes over with its retries reset; when the chain has no agent
    left, the role's chain is exhausted (see :func:`chain_exhausted`) — unless the last failure
    was the agent refusing its ``configuration``: then no dev-fix can help (it would run the
    same agents), and the run stops for a person, resumable at the same task.
    """
    run, progress, agent = state.run, state.progress, state.agent
    role = progress.role
    assert run is not None, "only a started run has agents"
    assert role is not None, "only an active agent task can fail"
    budget = run.budget
    ledger = evolve(
        state.ledger, last_error=message, agent_failures=state.ledger.agent_failures + 1
    )
    spent = stop_when_spent(state, ledger)
    if spent is not None:
        return spent
    if retriable and agent.retries < budget.max_retries_per_agent:
        retries = agent.retries + 1
        ceiling = backoff_ceiling(budget.backoff_base_ms, budget.backoff_cap_ms, retries)
        cursor = evolve(
            agent,
            retries=retries,
            in_flight=False,
            awaiting_output=False,
            backoff_ceiling_ms=ceiling if ceiling > 0 else None,
            # The message without the log it names: every attempt writes its own log.
            last_failure=LOG_NAMED.sub("", message),
        )
        return advance(state, agent=cursor, ledger=ledger)
    position = agent.chain_position + 1
    # The next agent starts afresh: no retries, nothing in flight, no backoff or wait.
    cursor = AgentCursor(chain_position=position, attempt=agent.attempt)
    if position < len(agents_for(state, role)):
        return advance(state, agent=cursor, ledger=ledger)
    if configuration and role is not Role.FIXER:
        needed = evolve(
            ledger,
            last_error=f"{message} (no agent of the {role.value} chain is left: fix the "
            "configuration in ralph.toml, then ralph resume)",
        )
        phase = state.progress.phase
        return interrupt(
            state, TerminationReason.HUMAN_INTERVENTION_REQUIRED, phase, Step.PROMPT, needed
        )
    return chain_exhausted(evolve(state, agent=cursor, ledger=ledger), role)


def chain_exhausted(state: PipelineState, role: Role) -> PipelineState:
    """No agent of ``role``'s chain is left for the current task.

    A failing fixer ends dev-fix unsuccessfully (straight to the completion marker); any other
    role hands the run to dev-fix, to be resumed at the same task afterwards.
    """
    progress = state.progress
    if role is Role.FIXER:
        next_progress = evolve(progress, step=Step.MARKER, dev_fix=fixed(progress, False))
        return transition(state, next_progress, CheckpointTrigger.AFTER_DEV_FIX)
    next_progress = evolve(
        progress,
        phase=Phase.AWAITING_DEV_FIX,
        step=Step.TRIGGER,
        dev_fix=DevFixTask(role=role),
        resume=ResumePoint(phase=progress.phase, step=Step.PROMPT),
    )
    return transition(state, next_progress, CheckpointTrigger.BEFORE_DEV_FIX)


def fixed(progress: Progress, success: bool) -> DevFixTask | None:
    """The dev-fix task once its fixer has reported ``success`` (None: no task was set)."""
    return None if progress.dev_fix is None else evolve(progress.dev_fix, success=success)
