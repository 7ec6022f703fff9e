"""Lifecycle hooks in the pure layers: a hypothesis law that the loop ends within its budgets
whatever hooks at every point report, with each hook run once per occasion, and examples of
what a failure does at each point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import event, given
from hypothesis import strategies as st

from pipeline.app.testing import HypothesisChooser, world_configs
from pipeline.core.effects import BeginPlanning, EffectId, Terminate
from pipeline.core.state import Phase, PipelineState, TerminationReason
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import (
    BLOCKABLE,
    SUSPENDABLE,
    DurationMs,
    ExitCode,
    GateStatus,
    HookAction,
    HookPoint,
    HookRan,
    HookSpec,
    Instant,
    InvocationStarted,
    PipelineEvent,
)
from pipeline.orchestration import hook_due, hooks_after, next_effect, run_end_hook, step_bound
from pipeline.reducers import fold, reduce
from tests.reducers.test_loop_control import policy, started
from tests.support import WHOLE_RUNS, budget

T = Instant(datetime(2026, 11, 27, tzinfo=UTC))


def _ran(hook: HookSpec, status: GateStatus) -> HookRan:
    code = (
        None
        if status in (GateStatus.NOT_STARTED, GateStatus.TIMED_OUT)
        else ExitCode(0 if status is GateStatus.PASSED else 1)
    )
    return HookRan(
        hook=hook.name,
        point=hook.point,
        argv=hook.argv,
        status=status,
        exit_code=code,
        duration_ms=DurationMs(5),
        tail="out",
        at=T,
    )


_STATUSES = st.sampled_from([GateStatus.PASSED] * 9 + list(GateStatus)[1:])


@st.composite
def hook_sets(draw: st.DrawFn) -> tuple[HookSpec, ...]:
    hooks = []
    for point in HookPoint:
        allowed = [HookAction.WARN]
        allowed += [HookAction.BLOCK] if point in BLOCKABLE else []
        allowed += [HookAction.SUSPEND] if point in SUSPENDABLE else []
        for n in range(draw(st.integers(0, 2))):
            action = draw(st.sampled_from(allowed))
            hooks.append(
                HookSpec(name=f"h{n}", point=point, argv=("x",), timeout_s=1, on_error=action)
            )
    return tuple(hooks)


@WHOLE_RUNS
@given(configs=world_configs(), hooks=hook_sets(), data=st.data())
def test_the_loop_ends_within_its_budgets_whatever_the_hooks_report(
    configs: WorldConfig, hooks: tuple[HookSpec, ...], data: st.DataObject
) -> None:
    """Hooks at every point, failing or not as hypothesis chooses: the run ends (complete, or
    stopped resumably by a suspending hook) within its step bound plus one run of each hook per
    step; each once-per-occasion hook runs at most once per occasion; a run stopped as
    ``hook_blocked`` had a blocking hook fail, a ``suspended`` one a suspending hook."""
    config = attrs.evolve(configs, loop=attrs.evolve(configs.loop, hooks=hooks))
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=HypothesisChooser(data.draw), clock=clock)
    bound = step_bound(config.budget, config.chains, config.loop)
    state, log = PipelineState(), []
    failed_actions: set[HookAction] = set()

    def fold_in(facts: list[PipelineEvent] | tuple[PipelineEvent, ...]) -> None:
        nonlocal state
        for fact in facts:
            log.append(fact)
            state = reduce(state, fact)

    def run(hook: HookSpec) -> None:
        # Mostly passing, so that runs get far; each failure is any of the other statuses.
        status = data.draw(_STATUSES, label=f"{hook.point} {hook.name}")
        if status is not GateStatus.PASSED:
            failed_actions.add(hook.on_error)
        fold_in([_ran(hook, status)])

    steps = 0
    while state.phase not in (Phase.COMPLETE, Phase.INTERRUPTED):
        steps += 1
        assert steps <= bound * (1 + len(hooks)) + len(hooks), "the loop did not end"
        effect = next_effect(state)
        hook = hook_due(state, effect)
        if hook is not None:
            run(hook)
            continue
        if isinstance(effect, Terminate):
            break
        facts = tuple(world(effect))
        fold_in(facts)
        for after in hooks_after(state, effect, facts):
            if state.phase is Phase.INTERRUPTED:
                break
            run(after)
    while (end := run_end_hook(state)) is not None:
        run(end)
    assert state.phase in (Phase.COMPLETE, Phase.INTERRUPTED)
    event(
        f"{state.termination} after {len(log)} facts" if len(log) < 20 else str(state.termination)
    )
    assert state == fold(log)
    once = state.hooks.once
    assert len(once) == len(set(once))
    if state.termination is TerminationReason.HOOK_BLOCKED:
        assert HookAction.BLOCK in failed_actions
    if state.termination is TerminationReason.SUSPENDED:
        assert HookAction.SUSPEND in failed_actions


def _hook(point: HookPoint, action: HookAction = HookAction.WARN) -> HookSpec:
    return HookSpec(name="h", point=point, argv=("x",), timeout_s=5, on_error=action)


def _drive(config: WorldConfig, report: GateStatus) -> list[PipelineEvent]:
    """A smooth simulated run of ``config`` whose every hook reports ``report``."""
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(), clock=fake_clock(step=timedelta(seconds=1))
    )
    state, log = PipelineState(), []
    while state.phase not in (Phase.COMPLETE, Phase.INTERRUPTED):
        effect = next_effect(state)
        hook = hook_due(state, effect)
        facts: tuple[PipelineEvent, ...]
        if hook is not None:
            facts = (_ran(hook, report),)
        elif isinstance(effect, Terminate):
            break
        else:
            facts = tuple(world(effect))
            facts += tuple(_ran(h, report) for h in hooks_after(state, effect, facts))
        for fact in facts:
            log.append(fact)
            state = reduce(state, fact)
    while (end := run_end_hook(state)) is not None:
        log.append(_ran(end, report))
        state = reduce(state, log[-1])
    return log


def test_each_hook_runs_once_at_each_of_its_occasions() -> None:
    """Before every invocation and after it, once at the start and once at the end."""
    points = (
        HookPoint.RUN_START,
        HookPoint.BEFORE_INVOCATION,
        HookPoint.AFTER_INVOCATION,
        HookPoint.RUN_END,
    )
    base = WorldConfig(budget=budget(max_iterations=2), chains=default_chains())
    hooks = tuple(_hook(point) for point in points)
    log = _drive(attrs.evolve(base, loop=attrs.evolve(base.loop, hooks=hooks)), GateStatus.PASSED)
    ran = [e.point for e in log if isinstance(e, HookRan)]
    invocations = sum(isinstance(e, InvocationStarted) for e in log)
    assert invocations > 2
    assert ran.count(HookPoint.RUN_START) == 1
    assert ran.count(HookPoint.RUN_END) == 1
    assert ran.count(HookPoint.BEFORE_INVOCATION) == invocations
    assert ran.count(HookPoint.AFTER_INVOCATION) == invocations
    for index, fact in enumerate(log):
        if isinstance(fact, InvocationStarted):
            before = log[index - 1]
            assert isinstance(before, HookRan)
            assert before.point is HookPoint.BEFORE_INVOCATION
    assert isinstance(log[-1], HookRan)
    assert fold(log).phase is Phase.COMPLETE


def test_a_warning_hook_tells_the_developer_and_the_run_goes_on() -> None:
    hook = _hook(HookPoint.BEFORE_INVOCATION)
    state = reduce(started(policy(hooks=(hook,))), _ran(hook, GateStatus.FAILED))
    (notice,) = state.intake.notices
    assert notice.topic == "ralph.hook_warning"
    assert "Hook 'h' (before_invocation) failed" in notice.text
    assert state.hooks.warned == 1
    assert state.phase is not Phase.FINALIZING


def test_a_blocked_completion_is_refused_and_a_suspended_run_resumes_where_it_was() -> None:
    claim = _hook(HookPoint.COMPLETION_CLAIMED, HookAction.BLOCK)
    state = started(policy(hooks=(claim,)))
    claimed = attrs.evolve(state, intake=attrs.evolve(state.intake, completion_claimed=True))
    refused = reduce(claimed, _ran(claim, GateStatus.FAILED))
    assert not refused.intake.completion_claimed
    assert refused.intake.notices[-1].topic == "build.blocked"
    hold = _hook(HookPoint.BEFORE_INVOCATION, HookAction.SUSPEND)
    held = reduce(started(policy(hooks=(hold,))), _ran(hold, GateStatus.TIMED_OUT))
    assert held.phase is Phase.INTERRUPTED
    assert held.termination is TerminationReason.SUSPENDED
    assert held.progress.resume is not None
    assert held.hooks.here == ()  # not recorded as run: it runs again once resumed


def test_a_blocked_claim_runs_its_hook_again_at_the_next_claim_and_a_commit_goes_on() -> None:
    """Found by a review: a blocked claim was recorded as done (the next claim skipped the
    hook), and a claim made while the work was being committed went on to validation."""
    claim = _hook(HookPoint.COMPLETION_CLAIMED, HookAction.BLOCK)
    state = started(policy(hooks=(claim,)))
    committing = attrs.evolve(
        state,
        progress=attrs.evolve(
            state.progress, phase=Phase.COMMIT_MESSAGE, after_commit=Phase.FINAL_VALIDATION
        ),
        intake=attrs.evolve(state.intake, completion_claimed=True),
    )
    refused = reduce(committing, _ran(claim, GateStatus.FAILED))
    assert refused.progress.after_commit is Phase.DEVELOPMENT
    assert refused.hooks.once == ()
    claimed_again = attrs.evolve(
        refused, intake=attrs.evolve(refused.intake, completion_claimed=True)
    )
    assert hook_due(claimed_again, BeginPlanning(effect_id=EffectId("e"))) == claim


def test_a_watching_hooks_failure_is_counted_and_never_told_to_the_agents() -> None:
    notify = _hook(HookPoint.QUESTION_ASKED)
    state = reduce(started(policy(hooks=(notify,))), _ran(notify, GateStatus.FAILED))
    assert state.hooks.warned == 1
    assert state.intake.notices == ()


def test_hooks_with_nothing_to_run_them_are_refused() -> None:
    """An embedding that records hooks but passes no runner fails instead of skipping them."""
    import pytest

    from pipeline import PipelineError
    from pipeline.engine import run_in_memory

    base = WorldConfig(budget=budget(max_iterations=1), chains=default_chains())
    hook = _hook(HookPoint.RUN_START, HookAction.BLOCK)
    config = attrs.evolve(base, loop=attrs.evolve(base.loop, hooks=(hook,)))
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(), clock=fake_clock(step=timedelta(seconds=1))
    )
    with pytest.raises(PipelineError, match="nothing runs them"):
        run_in_memory(world)
