"""Reducer for hook facts: a lifecycle hook's command ran, and its failure does what the
run's policy says (pure).

- ``warn``: counted, and the developer's next prompt is told (``ralph.hook_warning``);
- ``block`` at the run's start or before an invocation: the run stops as ``hook_blocked``;
- ``block`` before a commit: nothing is committed, and the work goes back to development
  with a ``build.blocked`` notice (a failed iteration, as a blocking gate's);
- ``block`` of a completion: the claim is refused; a run already validating goes back to
  development;
- ``suspend``: the run stops, resumably, as ``suspended``, before the step; once resumed, the
  hook runs again (its run is not recorded as done).
"""

from __future__ import annotations

from typing import Final, assert_never

from attrs import evolve

from pipeline.core.state import (
    AFTER_POINTS,
    ONCE_POINTS,
    Ledger,
    Notice,
    Phase,
    PipelineState,
    TerminationReason,
    hook_key,
)
from pipeline.events import (
    BLOCKABLE,
    TASK_BLOCKED_TOPIC,
    GateStatus,
    HookAction,
    HookEvent,
    HookPoint,
    HookRan,
    Json,
    Role,
)
from pipeline.reducers._build import advance, resume_fact
from pipeline.reducers._iterations import iteration_failed
from pipeline.reducers._notices import add_notice
from pipeline.reducers._routing import back_to_last_hat
from pipeline.reducers._transitions import finalize, interrupt, start_development

__all__ = ["HOOK_WARNING_TOPIC", "reduce_hook"]

HOOK_WARNING_TOPIC: Final = "ralph.hook_warning"
"""The notice telling the developer a warning hook failed, with the end of its output."""


def reduce_hook(state: PipelineState, event: HookEvent) -> PipelineState:
    """Fold one hook fact into ``state``."""
    match event:
        case HookRan():
            ran = _ran(state, event)
            if state.ledger.last_resume_sequence != state.sequence:
                return ran
            # A hook run again right after a resume, before the step the stop cut short.
            return evolve(ran, ledger=resume_fact(ran.ledger, state))
        case _:
            assert_never(event)


def _summary(event: HookRan) -> str:
    command = " ".join(event.argv)
    if event.status is GateStatus.NOT_STARTED:
        how = "could not be started"
    elif event.status is GateStatus.TIMED_OUT:
        how = f"timed out after {event.duration_ms / 1000:.1f} s"
    else:
        how = f"exited with status {event.exit_code}"
    return f"Hook '{event.hook}' ({event.point.value}) failed: `{command}` {how}"


def _ran(state: PipelineState, event: HookRan) -> PipelineState:
    hooks = state.hooks
    key = hook_key(state, event.point, event.hook)
    spec = None
    if state.run is not None:
        spec = next((h for h in state.run.loop.hooks_at(event.point) if h.name == event.hook), None)
    action = HookAction.WARN if spec is None else spec.on_error
    failed = event.status is not GateStatus.PASSED
    blocks_claim = action is HookAction.BLOCK and event.point is HookPoint.COMPLETION_CLAIMED
    if failed and action is HookAction.SUSPEND:
        # Not recorded as run: the resumed run runs it again before the same step.
        summary = _summary(event)
        ledger = evolve(state.ledger, last_error=summary)
        stopped = evolve(state, hooks=evolve(hooks, last_failure=summary))
        progress = state.progress
        if progress.phase in (Phase.COMPLETE, Phase.INTERRUPTED, Phase.NOT_STARTED):
            return advance(stopped, ledger=ledger)
        return interrupt(
            stopped, TerminationReason.SUSPENDED, progress.phase, progress.step, ledger
        )
    if failed and blocks_claim:
        pass  # the claim is refused: the next claim, in this iteration or not, runs it again
    elif event.point in ONCE_POINTS:
        hooks = evolve(hooks, once=(*hooks.once, key))
    else:
        hooks = hooks.with_here(key, state.sequence)
    if event.point in AFTER_POINTS and hooks.after is not None:
        hooks = evolve(hooks, after=evolve(hooks.after, ran=(*hooks.after.ran, key)))
    if not failed:
        return advance(state, hooks=hooks)
    summary = _summary(event)
    text = summary if not event.tail else f"{summary}\n{event.tail}"
    if action is HookAction.WARN or state.progress.phase is Phase.COMPLETE:
        hooks = evolve(hooks, warned=hooks.warned + 1, last_failure=summary)
        if event.point not in BLOCKABLE or state.progress.phase is Phase.COMPLETE:
            # A hook that watches (a notification, say) is no concern of the agents'.
            return advance(state, hooks=hooks)
        notice = Notice(topic=HOOK_WARNING_TOPIC, text=text, role=Role.DEVELOPER)
        return advance(state, hooks=hooks, intake=add_notice(state.intake, notice))
    hooks = evolve(hooks, blocked=hooks.blocked + 1, last_failure=summary)
    blocked = evolve(state, hooks=hooks)
    ledger = evolve(state.ledger, last_error=summary)
    point = event.point
    if point is HookPoint.BEFORE_COMMIT:
        return _back_to_development(
            blocked, text, summary, evolve(ledger, pending_commit_message=None)
        )
    if point is HookPoint.COMPLETION_CLAIMED:
        return _claim_refused(blocked, text, summary, ledger)
    return finalize(blocked, TerminationReason.HOOK_BLOCKED, ledger)


def _blocked_notice(state: PipelineState, text: str) -> PipelineState:
    notice = Notice(topic=TASK_BLOCKED_TOPIC, text=text, role=Role.DEVELOPER)
    # The claim did not hold up: the agent must claim again once the hook passes.
    intake = add_notice(state.intake, notice, completion_claimed=False)
    return evolve(state, intake=intake)


def _back_to_development(
    state: PipelineState, text: str, summary: str, ledger: Ledger
) -> PipelineState:
    """Nothing is committed: the work goes back to development, as a failed iteration."""
    told = _blocked_notice(state, text)
    routing = back_to_last_hat(told.routing, TASK_BLOCKED_TOPIC, Json.of(summary))
    progress = evolve(state.progress, after_commit=None)
    return iteration_failed(evolve(told, routing=routing), progress, ledger)


def _claim_refused(state: PipelineState, text: str, summary: str, ledger: Ledger) -> PipelineState:
    """The completion is refused: the claim is spent; a run that went on to validate it goes
    back to development."""
    told = _blocked_notice(state, text)
    progress = state.progress
    if progress.phase is Phase.FINAL_VALIDATION:
        routing = back_to_last_hat(told.routing, TASK_BLOCKED_TOPIC, Json.of(summary))
        return start_development(evolve(told, routing=routing), progress, ledger)
    if progress.after_commit is Phase.FINAL_VALIDATION:
        # Claimed while the work was being committed: after the commit, work goes on.
        return advance(
            told, progress=evolve(progress, after_commit=Phase.DEVELOPMENT), ledger=ledger
        )
    return advance(told, ledger=ledger)
