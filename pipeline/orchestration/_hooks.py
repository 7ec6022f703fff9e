"""Which lifecycle hook is due before a step, after an invocation, and once a run has ended
(pure: decided from the state, the step and the facts it made).

The engine asks before carrying out each effect: the first hook due runs, its fact is folded,
and the engine asks again (a hook that blocks or suspends changes what comes next). A hook's
run is keyed by its occasion (:func:`~pipeline.core.state.hook_key`), so it runs once per step,
once per run, question, reset or claim, whatever is asked how often.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.core.effects import (
    CreateCommit,
    Effect,
    InvokeAgent,
    SaveCheckpoint,
    Terminate,
    WaitForHuman,
    WaitForLimitReset,
)
from pipeline.core.state import Phase, PipelineState, hook_key
from pipeline.events import (
    HookPoint,
    HookSpec,
    InvocationFailed,
    InvocationTimedOut,
    PipelineEvent,
)

__all__ = ["hook_due", "hooks_after", "run_end_hook"]

_STEP_POINTS: tuple[tuple[type, HookPoint], ...] = (
    (InvokeAgent, HookPoint.BEFORE_INVOCATION),
    (CreateCommit, HookPoint.BEFORE_COMMIT),
    (WaitForHuman, HookPoint.QUESTION_ASKED),
    (WaitForLimitReset, HookPoint.LIMIT_WAIT),
)


def _first_due(state: PipelineState, points: Sequence[HookPoint]) -> HookSpec | None:
    assert state.run is not None
    loop = state.run.loop
    for point in points:
        for hook in loop.hooks_at(point):
            if not state.hooks.ran(hook_key(state, point, hook.name), state.sequence):
                return hook
    return None


def hook_due(state: PipelineState, effect: Effect) -> HookSpec | None:
    """The hook to run before ``effect`` (None: none is due, carry the effect out)."""
    run = state.run
    if run is None or not run.loop.hooks or isinstance(effect, SaveCheckpoint | Terminate):
        return None
    if state.progress.phase in (Phase.COMPLETE, Phase.INTERRUPTED, Phase.NOT_STARTED):
        return None
    points = [HookPoint.RUN_START]
    if state.intake.completion_claimed:
        points.append(HookPoint.COMPLETION_CLAIMED)
    points += [point for kind, point in _STEP_POINTS if isinstance(effect, kind)]
    question = state.ledger.pending_question
    if HookPoint.QUESTION_ASKED in points and (question is None or not question.asked):
        # Only once it was asked: the question's id (which ``ralph respond`` takes) is known.
        points.remove(HookPoint.QUESTION_ASKED)
    return _first_due(state, points)


def hooks_after(
    state: PipelineState, effect: Effect, facts: Sequence[PipelineEvent]
) -> tuple[HookSpec, ...]:
    """The hooks to run once ``effect``'s ``facts`` are folded into ``state``: after an
    invocation, and on its failure."""
    run = state.run
    if run is None or not run.loop.hooks or not isinstance(effect, InvokeAgent):
        return ()
    hooks = run.loop.hooks_at(HookPoint.AFTER_INVOCATION)
    if any(isinstance(fact, InvocationFailed | InvocationTimedOut) for fact in facts):
        hooks += run.loop.hooks_at(HookPoint.ON_FAILURE)
    return hooks


def run_end_hook(state: PipelineState) -> HookSpec | None:
    """The next ``run_end`` hook of a run that has ended (None: none left, or not ended)."""
    if state.run is None or state.progress.phase is not Phase.COMPLETE:
        return None
    return _first_due(state, (HookPoint.RUN_END,))
