"""The screen of a run's changes, first in final validation's round: examples of each action,
and a hypothesis law: no run completes while its last screen found a hit that blocks or stops."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import (
    HypothesisChooser,
    gate_specs,
    postcondition_policies,
    tamper_policies,
    world_configs,
)
from pipeline.core.effects import MaterializePrompt, ScreenChanges
from pipeline.core.state import PipelineState, TerminationReason, is_complete
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    SCREEN_FINDINGS,
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    ChangesScreened,
    CommitCreated,
    Count,
    DevelopmentIterationStarted,
    GateAction,
    GateBoundary,
    GateFinished,
    GateSpec,
    GateStatus,
    HatActivated,
    LoopPolicy,
    PipelineEvent,
    PostconditionPolicy,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    ScreenScope,
    TamperPolicy,
)
from pipeline.orchestration import next_effect, step_bound
from pipeline.reducers import fold, reduce, screen_action
from tests.reducers.test_gates import ended, finished, gate
from tests.support import WHOLE_RUNS, budget

T = TypeVar("T")

DELETED = (
    ScreenHit(
        kind=ScreenKind.TEST_FILE_DELETED,
        path="tests/test_calc.py",
        line=Count(0),
        detail="deleted",
    ),
)
NOTHING_FOUND, A_TAMPER_HIT, A_TODO, CUT_SHORT = range(4)


def run_screened(
    loop: LoopPolicy, findings: Sequence[int], iterations: int = 3
) -> tuple[PipelineEvent, ...]:
    """A smooth simulated run under ``loop`` whose screens find, in turn, what ``findings``
    names (the world's list: nothing, a tamper hit, a TODO, a screen cut short)."""
    loop = attrs.evolve(loop, required_events=())
    config = WorldConfig(
        budget=budget(max_iterations=iterations), chains=default_chains(("a",)), loop=loop
    )
    chooser = ScriptedChooser(answers={"screen hits": [SCREEN_FINDINGS[i] for i in findings]})
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=chooser, clock=clock)
    bound = step_bound(config.budget, config.chains, loop)
    return run_in_memory(world, options=RunOptions(max_effects=bound, clock=clock)).events


def screened(log: Sequence[PipelineEvent]) -> list[tuple[ScreenScope, tuple[ScreenKind, ...]]]:
    """Each screen's scope and the kinds of its hits, in order."""
    return [(e.scope, tuple(h.kind for h in e.hits)) for e in log if isinstance(e, ChangesScreened)]


TASK, RUN = ScreenScope.ITERATION, ScreenScope.RUN


TAMPER = attrs.evolve(simulated_policy(), tamper=TamperPolicy())


def test_a_run_that_does_not_screen_records_no_base_and_screens_nothing() -> None:
    log = run_screened(simulated_policy(), ())
    assert not [e for e in log if isinstance(e, ScreenBaseRecorded | ChangesScreened)]
    assert ended(log) is TerminationReason.COMPLETED


def test_clean_screens_let_the_run_complete_each_before_its_round_s_gates() -> None:
    """The developer's task is screened before its commit, the run's changes before the
    final gate; the tasks' postconditions wait for the run's screen."""
    loop = attrs.evolve(TAMPER, gates=(gate("tests"),))
    log = run_screened(loop, [NOTHING_FOUND])
    order = [
        e.scope if isinstance(e, ChangesScreened) else type(e).__name__
        for e in log
        if isinstance(e, ChangesScreened | GateFinished | CommitCreated)
    ]
    assert order == [TASK, "CommitCreated", RUN, "GateFinished"]
    assert ended(log) is TerminationReason.COMPLETED


def test_a_tamper_hit_blocks_names_the_file_and_spends_an_iteration() -> None:
    """The task's screen finds a test removed: nothing is committed, the developer is told
    precisely, with the way out, and works again; the next screens are clean: completed."""
    loop = attrs.evolve(TAMPER, gates=(gate("tests"),))
    log = run_screened(loop, [A_TAMPER_HIT])
    assert screened(log) == [(TASK, (ScreenKind.TEST_REMOVED,)), (TASK, ()), (RUN, ())]
    commits = [i for i, e in enumerate(log) if isinstance(e, CommitCreated)]
    first_screen = next(i for i, e in enumerate(log) if isinstance(e, ChangesScreened))
    assert len(commits) == 1  # the blocked iteration committed nothing
    assert commits[0] > first_screen
    assert len(finished(log)) == 1  # a final gate: only the final round runs it
    assert ended(log) is TerminationReason.COMPLETED
    state, prompts = PipelineState(), []
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, MaterializePrompt) and state.gating.blocked:
            prompts.append(effect)
        state = reduce(state, event)
    (notice,) = [n for n in prompts[0].notices if n.topic == "build.blocked"]
    assert "test_removed tests/test_app.py: 1 test fewer" in notice.text
    assert "human.interact" in notice.text
    assert state.gating.hits == 1
    assert state.gating.blocked == 1


def test_a_task_screen_that_never_comes_clean_never_commits_nor_completes() -> None:
    """Every task's work is blocked: no commit, and the blocks count as failed iterations
    (the smooth world's budget allows three in a row)."""
    log = run_screened(TAMPER, [A_TAMPER_HIT] * 10, iterations=5)
    assert not [e for e in log if isinstance(e, CommitCreated)]
    assert ended(log) is TerminationReason.CONSECUTIVE_FAILURES
    assert all(scope is TASK for scope, _kinds in screened(log))


def test_a_final_screen_that_never_comes_clean_never_completes() -> None:
    """The tasks' screens pass and the run's finds a new TODO every time."""
    loop = attrs.evolve(TAMPER, postconditions=PostconditionPolicy())
    findings = [NOTHING_FOUND, A_TODO] * 5
    log = run_screened(loop, findings, iterations=2)
    assert ended(log) is TerminationReason.MAX_ITERATIONS
    assert [kinds for scope, kinds in screened(log) if scope is RUN] == [
        (ScreenKind.TODO_ADDED,),
        (ScreenKind.TODO_ADDED,),
    ]


def test_a_tamper_hit_the_policy_turns_to_warn_only_warns() -> None:
    loop = attrs.evolve(
        simulated_policy(),
        tamper=TamperPolicy(actions=((ScreenKind.TEST_REMOVED, GateAction.WARN),)),
    )
    log = run_screened(loop, [A_TAMPER_HIT])
    assert ended(log) is TerminationReason.COMPLETED
    final = fold(log)
    assert final.gating.warned == 1
    assert "ralph.gate_warning" in final.intake.seen_topics


def test_a_stopping_hit_ends_the_run_before_any_gate_runs() -> None:
    loop = attrs.evolve(
        simulated_policy(), tamper=TamperPolicy(on_hit=GateAction.STOP), gates=(gate("tests"),)
    )
    log = run_screened(loop, [A_TAMPER_HIT])
    assert ended(log) is TerminationReason.GATE_FAILED
    assert finished(log) == []
    last_error = fold(log).ledger.last_error
    assert last_error is not None
    assert "test_removed" in last_error


def test_a_postcondition_acts_by_the_postconditions_not_by_the_tamper_policy() -> None:
    """A new TODO: the tamper policy stops on hits, the postconditions only warn."""
    loop = attrs.evolve(
        simulated_policy(),
        tamper=TamperPolicy(on_hit=GateAction.STOP),
        postconditions=PostconditionPolicy(on_failure=GateAction.WARN),
    )
    log = run_screened(loop, [A_TODO])
    assert ended(log) is TerminationReason.COMPLETED
    assert fold(log).gating.warned == 1


def test_screen_actions() -> None:
    both = attrs.evolve(
        simulated_policy(),
        tamper=TamperPolicy(on_hit=GateAction.STOP),
        postconditions=PostconditionPolicy(on_failure=GateAction.WARN),
    )
    only_post = attrs.evolve(both, tamper=None)
    assert screen_action(both, ScreenKind.TEST_REMOVED) is GateAction.STOP
    assert screen_action(both, ScreenKind.SKIP_ADDED) is GateAction.STOP
    assert screen_action(both, ScreenKind.SECRET_ADDED) is GateAction.WARN
    assert screen_action(both, ScreenKind.SCREEN_INCOMPLETE) is GateAction.WARN
    # A skip found by the postconditions alone acts by theirs.
    assert screen_action(only_post, ScreenKind.SKIP_ADDED) is GateAction.WARN


def test_the_screen_starts_at_the_recorded_base_and_moves_with_a_rebase() -> None:
    """The effect asks for the change from the base the run recorded; a rebase records the
    tip it rebased onto, and the next screen starts there."""
    log = run_screened(TAMPER, [NOTHING_FOUND])
    state = PipelineState()
    asked: list[ScreenChanges] = []
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, ScreenChanges):
            asked.append(effect)
        state = reduce(state, event)
    # The simulated repository had no commit: the task's screen starts at the run's base
    # (the empty tree), the run's too; the task's work was committed in between.
    assert [(a.scope, a.base) for a in asked] == [(TASK, None), (RUN, None)]
    assert asked[0].tamper == TamperPolicy()
    assert asked[0].postconditions is None  # a task's screen looks for tampering only
    started = fold(log[:3])
    assert isinstance(log[2], ScreenBaseRecorded)
    assert started.gating.base_recorded
    moved = reduce(started, ScreenBaseRecorded(sha="a" * 40, at=log[3].at))
    assert moved.gating.run_base == "a" * 40
    assert moved.gating.work_base is None  # a later base (a rebase) leaves the tasks' alone
    assert moved.ledger.anomalies == 0
    committed = next(e for e in log if isinstance(e, CommitCreated))
    assert fold(log).gating.work_base == committed.sha


def test_a_screen_nobody_asked_for_is_an_anomaly_and_changes_nothing_else() -> None:
    log = run_screened(TAMPER, [NOTHING_FOUND])
    state = fold(log)
    after = reduce(
        state,
        ChangesScreened(
            scope=ScreenScope.RUN, base=None, files=Count(1), hits=DELETED, at=log[-1].at
        ),
    )
    assert after.ledger.anomalies == state.ledger.anomalies + 1
    assert after.gating == state.gating


def test_without_a_recorded_base_no_screen_is_asked_for() -> None:
    """A log whose run recorded no base (it cannot tell where its changes start) runs its
    gates unscreened rather than screening the whole repository as new."""
    log = [
        e for e in run_screened(TAMPER, [NOTHING_FOUND]) if not isinstance(e, ScreenBaseRecorded)
    ]
    state = PipelineState()
    for event in log:
        if isinstance(event, ChangesScreened):
            break
        assert not isinstance(next_effect(state), ScreenChanges)
        state = reduce(state, event)


def _committed_after_a_block(events: Sequence[PipelineEvent], loop: LoopPolicy) -> bool:
    """Whether a commit followed a developer task's round that blocked (a screen's blocking
    hit or a blocking gate at the task's boundary) before development began again."""
    blocked = False
    for event in events:
        if isinstance(event, ChangesScreened) and event.scope is TASK:
            blocked |= GateAction.BLOCK in {screen_action(loop, h.kind) for h in event.hits}
        elif isinstance(event, GateFinished) and event.status is not GateStatus.PASSED:
            spec = loop.gate(event.gate)
            task = event.boundary in (GateBoundary.ITERATION, GateBoundary.COMMIT)
            blocked |= task and spec is not None and spec.on_failure is GateAction.BLOCK
        elif isinstance(event, DevelopmentIterationStarted | HatActivated):
            blocked = False
        elif isinstance(event, CommitCreated) and blocked:
            return True
    return False


class _DrawnFindings(HypothesisChooser):
    """Hypothesis's choices, with the screen's findings and a gate's outcome drawn evenly."""

    def __init__(self, draw: st.DrawFn) -> None:
        super().__init__(draw)
        self._drawing = draw

    def pick(self, options: Sequence[T], what: str) -> T:
        if what in ("screen hits", "gate status"):
            return self._drawing(st.sampled_from(options), label=what)
        return super().pick(options, what)


@WHOLE_RUNS
@given(
    config=world_configs(),
    gates=gate_specs(),
    tamper=tamper_policies(),
    post=postcondition_policies(),
    data=st.data(),
)
def test_no_run_completes_while_its_last_screen_found_a_hit_that_blocks_or_stops(
    config: WorldConfig,
    gates: tuple[GateSpec, ...],
    tamper: TamperPolicy | None,
    post: PostconditionPolicy | None,
    data: st.DataObject,
) -> None:
    """Whatever the world, gates and policies: every run ends within its step bound with no
    anomaly, and one that completes had no blocking or stopping hit in its last screen."""
    loop: LoopPolicy = attrs.evolve(
        config.loop, gates=gates, tamper=tamper, postconditions=post, required_events=()
    )
    config = attrs.evolve(config, loop=loop)
    world = SimulatedWorld(config=config, chooser=_DrawnFindings(data.draw))
    result = run_in_memory(
        world, options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop))
    )
    assert is_complete(result.state)
    assert result.state.ledger.anomalies == 0, result.state.ledger.last_anomaly
    screens = [e for e in result.events if isinstance(e, ChangesScreened)]
    if loop.screens:
        # A task's screen per iteration and review fix, and the run's per validation.
        budget = config.budget
        assert len(screens) <= 2 * budget.max_iterations + budget.max_review_passes
    else:
        assert not screens
    assert not _committed_after_a_block(result.events, loop)
    if result.state.termination is not TerminationReason.COMPLETED or not screens:
        return
    actions = {screen_action(loop, h.kind) for h in screens[-1].hits}
    assert actions <= {GateAction.WARN}, screens[-1].hits
