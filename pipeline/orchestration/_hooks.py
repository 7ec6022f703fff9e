"""Which lifecycle hook is due: after an invocation, before a step, and once a run has ended,
as a :class:`~pipeline.core.effects.RunHook` effect (pure: decided from the state alone).

``next_effect`` asks :func:`hooked` with the step it decided: the first hook due comes before
it, its fact is folded, and the next ``next_effect`` asks again (a hook that blocks or suspends
changes what comes next). A hook's run is keyed by its occasion
(:func:`~pipeline.core.state.hook_key`), so it runs once per step, once per run, question,
reset or claim, whatever is asked how often. The hooks after an invocation are due once its
facts are in (the state keeps the invocation: :class:`~pipeline.core.state.AfterInvocation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.core import effects as fx
from pipeline.core.state import Phase, PipelineState, hook_key
from pipeline.events import (
    HookAction,
    HookPoint,
    HookSpec,
    InvocationStarted,
    Json,
    LogPosition,
)
from pipeline.orchestration._pinning import pinned_to

__all__ = ["hooked"]

_STEP_POINTS: tuple[tuple[type, HookPoint], ...] = (
    (fx.InvokeAgent, HookPoint.BEFORE_INVOCATION),
    (fx.CreateCommit, HookPoint.BEFORE_COMMIT),
    (fx.WaitForHuman, HookPoint.QUESTION_ASKED),
    (fx.WaitForLimitReset, HookPoint.LIMIT_WAIT),
)


def hooked(state: PipelineState, effect: fx.Effect) -> fx.Effect:
    """``effect`` (decided from ``state``), unless a hook is due first: one after the last
    invocation, one before ``effect``, or, once the run has ended, a ``run_end`` hook."""
    run = state.run
    if run is None or not run.loop.hooks:
        return effect
    after = _after_due(state)
    if after is not None:
        return _run(state, effect, after[0], after[1])
    if isinstance(effect, fx.SaveCheckpoint):
        return effect
    if isinstance(effect, fx.Terminate):
        if state.progress.phase is not Phase.COMPLETE:
            return effect
        end = _first_due(state, (HookPoint.RUN_END,))
        return effect if end is None else _run(state, effect, end, None)
    hook = _before_due(state, effect)
    return effect if hook is None else _run(state, effect, hook, effect)


def _run(
    state: PipelineState,
    decided: fx.Effect,
    hook: HookSpec,
    about: fx.Effect | InvocationStarted | None,
) -> fx.RunHook:
    """The effect running ``hook`` in ``state``, about to carry out ``about`` (or just after
    it, an invocation; None: the run has ended). A blocking hook is pinned as gates are."""
    base = pinned_to(state) if hook.on_error is HookAction.BLOCK else None
    tamper = None if state.run is None else state.run.loop.tamper
    return fx.RunHook(
        effect_id=decided.effect_id,
        hook=hook,
        input=Json.of(_input(hook, state, about)),
        sequence=LogPosition(state.sequence),
        pin_base=base,
        test_paths=() if base is None or tamper is None else tamper.test_paths,
    )


def _input(
    hook: HookSpec, state: PipelineState, about: fx.Effect | InvocationStarted | None
) -> dict[str, Any]:
    """What a hook is told on its standard input: where the run stands and what is about to
    happen (or just happened: an invocation)."""
    run, progress, ledger = state.run, state.progress, state.ledger
    data: dict[str, Any] = {
        "hook": hook.name,
        "point": hook.point.value,
        "run_id": None if run is None else run.run_id,
        "phase": progress.phase.value,
        "iteration": progress.iteration,
        "review_pass": progress.review_pass,
        "termination": None if progress.termination is None else progress.termination.value,
        "commits": ledger.commits,
        "last_error": ledger.last_error,
        "tasks_not_done": [t.task_id for t in state.context.open_tasks()],
    }
    if isinstance(about, fx.InvokeAgent | InvocationStarted):
        data |= {"role": about.role.value, "agent": about.agent, "attempt": about.attempt}
    if ledger.pending_question is not None:
        data["question"] = ledger.pending_question.question
        data["question_id"] = ledger.pending_question.question_id
    if state.agent.limit_until is not None:
        data["limit_until"] = state.agent.limit_until.isoformat()
    return data


def _first_due(state: PipelineState, points: Sequence[HookPoint]) -> HookSpec | None:
    assert state.run is not None
    loop = state.run.loop
    for point in points:
        for hook in loop.hooks_at(point):
            if not state.hooks.ran(hook_key(state, point, hook.name), state.sequence):
                return hook
    return None


def _before_due(state: PipelineState, effect: fx.Effect) -> HookSpec | None:
    """The hook to run before ``effect`` (None: none is due, carry the effect out)."""
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


def _after_due(state: PipelineState) -> tuple[HookSpec, InvocationStarted] | None:
    """The hook to run after the last invocation, and its start (None: none is due). They
    watch: a suspended run runs none, and a resumed one none of an invocation before it."""
    after, run = state.hooks.after, state.run
    if after is None or run is None or state.progress.phase is Phase.INTERRUPTED:
        return None
    resumed = state.ledger.last_resume_sequence
    if resumed is not None and resumed > after.at:
        return None
    hooks = run.loop.hooks_at(HookPoint.AFTER_INVOCATION)
    if after.failed:
        hooks += run.loop.hooks_at(HookPoint.ON_FAILURE)
    for hook in hooks:
        if hook_key(state, hook.point, hook.name) not in after.ran:
            return hook, after.started
    return None
