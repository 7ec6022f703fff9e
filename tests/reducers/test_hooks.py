"""Lifecycle hooks in the pure layers: a hypothesis law that the loop ends within its budgets
whatever hooks at every point report, with each hook run once per occasion, and examples of
what a failure does at each point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import attrs
from hypothesis import event, given
from hypothesis import strategies as st

from pipeline.app.testing import HypothesisChooser, world_configs
from pipeline.core.effects import Begin, EffectId, RunHook, Terminate
from pipeline.core.state import Phase, PipelineState, Step, TerminationReason
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
    AgentName,
    Digest,
    DurationMs,
    ErrorKind,
    ExitCode,
    GateStatus,
    HookAction,
    HookPoint,
    HookRan,
    HookSpec,
    Instant,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    Ordinal,
    PipelineEvent,
    Role,
    RunResumed,
)
from pipeline.orchestration import next_effect, step_bound
from pipeline.orchestration._hooks import hooked
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
    while not isinstance(effect := next_effect(state), Terminate):
        steps += 1
        assert steps <= bound * (1 + len(hooks)) + len(hooks), "the loop did not end"
        if isinstance(effect, RunHook):
            run(effect.hook)
        else:
            fold_in(tuple(world(effect)))
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


EVERY_OCCASION: tuple[HookPoint, ...] = (
    HookPoint.RUN_START,
    HookPoint.BEFORE_INVOCATION,
    HookPoint.AFTER_INVOCATION,
    HookPoint.RUN_END,
)
"""A hook at the start, before and after each invocation, and at the end."""


def _hooked(hooks: tuple[HookSpec, ...], *, iterations: int = 2) -> WorldConfig:
    """A smooth simulated world of ``iterations`` development iterations with ``hooks``."""
    base = WorldConfig(budget=budget(max_iterations=iterations), chains=default_chains())
    return attrs.evolve(base, loop=attrs.evolve(base.loop, hooks=hooks))


def _drive(config: WorldConfig, report: GateStatus) -> list[PipelineEvent]:
    """A smooth simulated run of ``config`` whose every hook reports ``report``."""
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(), clock=fake_clock(step=timedelta(seconds=1))
    )
    state, log = PipelineState(), []
    while not isinstance(effect := next_effect(state), Terminate):
        facts = (_ran(effect.hook, report),) if isinstance(effect, RunHook) else world(effect)
        for fact in facts:
            log.append(fact)
            state = reduce(state, fact)
    return log


def test_each_hook_runs_once_at_each_of_its_occasions() -> None:
    """Before every invocation and after it, once at the start and once at the end."""
    log = _drive(_hooked(tuple(_hook(point) for point in EVERY_OCCASION)), GateStatus.PASSED)
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
    again = hooked(claimed_again, Begin(effect_id=EffectId("e"), phase=Phase.PLANNING))
    assert isinstance(again, RunHook)
    assert again.hook == claim


def test_a_watching_hooks_failure_is_counted_and_never_told_to_the_agents() -> None:
    notify = _hook(HookPoint.QUESTION_ASKED)
    state = reduce(started(policy(hooks=(notify,))), _ran(notify, GateStatus.FAILED))
    assert state.hooks.warned == 1
    assert state.intake.notices == ()


def test_the_engine_runs_hooks_as_effects_of_the_handler() -> None:
    """Hooks reach the handler as ``RunHook`` effects like any other step (no side channel):
    a run in memory over the simulated world records each hook's fact where it is due."""
    from pipeline.engine import run_in_memory

    hooks = (
        _hook(HookPoint.RUN_START, HookAction.BLOCK),
        _hook(HookPoint.AFTER_INVOCATION),
        _hook(HookPoint.RUN_END),
    )
    config = _hooked(hooks, iterations=1)
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(), clock=fake_clock(step=timedelta(seconds=1))
    )
    result = run_in_memory(world)
    ran = [e for e in result.events if isinstance(e, HookRan)]
    asked = [e.hook.point for e in result.effects if isinstance(e, RunHook)]
    assert [e.point for e in ran] == asked
    assert asked[0] is HookPoint.RUN_START
    assert asked[-1] is HookPoint.RUN_END
    invocations = sum(isinstance(e, InvocationStarted) for e in result.events)
    assert asked.count(HookPoint.AFTER_INVOCATION) == invocations > 0
    assert result.state.phase is Phase.COMPLETE


def test_hooks_on_failure_watch_the_invocations_own_outcome_once_and_not_past_a_resume() -> None:
    """An ``on_failure`` hook is due once after an invocation whose own outcome failed, told
    the invocation's role, agent and attempt; not after one that succeeded and whose report a
    later step rejected, and not once the run was resumed in between."""
    watch = _hook(HookPoint.ON_FAILURE)
    state = started(policy(hooks=(watch,)))
    progress = attrs.evolve(state.progress, phase=Phase.DEVELOPMENT, step=Step.INVOKE)
    state = attrs.evolve(state, progress=progress)
    agent = AgentName("a")
    start = InvocationStarted(
        role=Role.DEVELOPER, agent=agent, model=None, attempt=Ordinal(1), at=T
    )
    invoking = reduce(state, start)

    def failure(error: ErrorKind) -> InvocationFailed:
        return InvocationFailed(
            role=Role.DEVELOPER, agent=agent, error=error, message="x", retriable=True, at=T
        )

    succeeded = InvocationSucceeded(
        role=Role.DEVELOPER,
        agent=agent,
        exit_code=ExitCode(0),
        duration_ms=DurationMs(1),
        output_digest=Digest("d"),
        at=T,
    )
    ok = reduce(invoking, succeeded)
    assert not isinstance(next_effect(ok), RunHook)
    rejected = reduce(ok, failure(ErrorKind.OUTPUT_REJECTED))
    assert not isinstance(next_effect(rejected), RunHook)
    failed = reduce(invoking, failure(ErrorKind.NON_ZERO_EXIT))
    due = next_effect(failed)
    assert isinstance(due, RunHook)
    assert due.hook == watch
    told = due.input.value
    assert isinstance(told, dict)
    assert (told["role"], told["agent"], told["attempt"]) == ("developer", "a", 1)
    assert not isinstance(next_effect(reduce(failed, _ran(watch, GateStatus.FAILED))), RunHook)
    resumed = reduce(failed, RunResumed(checkpoint_sequence=None, at=T))
    assert not isinstance(next_effect(resumed), RunHook)


def test_a_run_resumed_after_every_step_runs_each_hook_once_per_occasion() -> None:
    """A run stopped after each effect (``max_effects=1``) and resumed runs each hook as often
    as an unbroken run: hooks are not counted as effects, the hooks watching an invocation run
    before the stop, and a hook due before a step waits for the resume."""
    from pipeline.engine import RunOptions, run_durable
    from pipeline.handlers.store import MemoryEventStore

    config = _hooked(tuple(_hook(point) for point in EVERY_OCCASION))
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(), clock=fake_clock(step=timedelta(seconds=1))
    )
    store, one = MemoryEventStore(), RunOptions(max_effects=1)
    run = run_durable(store, world, options=one)
    for _ in range(500):
        if run.state.phase is Phase.COMPLETE and not isinstance(next_effect(run.state), RunHook):
            break
        run = run_durable(store, world, run_id=run.run_id, options=one)
    log = list(store.read(run.run_id))
    ran = [e.point for e in log if isinstance(e, HookRan)]
    invocations = sum(isinstance(e, InvocationStarted) for e in log)
    assert invocations > 2
    assert ran.count(HookPoint.RUN_START) == 1
    assert ran.count(HookPoint.RUN_END) == 1
    assert ran.count(HookPoint.BEFORE_INVOCATION) == invocations
    assert ran.count(HookPoint.AFTER_INVOCATION) == invocations
