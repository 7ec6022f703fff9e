"""The screen of a run's changes, first in final validation's round: examples of each action,
and a hypothesis law: no run completes while its last screen found a hit that blocks or stops."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

import attrs
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.effects import MaterializePrompt, ScreenChanges
from pipeline.engine import run_in_memory
from pipeline.events import (
    ChangesScreened,
    Count,
    GateAction,
    GateFinished,
    GateSpec,
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
from pipeline.reducers import fold, reduce
from pipeline.reducers._screening import screen_action
from pipeline.simulation import (
    SCREEN_FINDINGS,
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.state import PipelineState, TerminationReason, is_complete
from pipeline.testing import (
    HypothesisChooser,
    gate_specs,
    postcondition_policies,
    tamper_policies,
    world_configs,
)
from tests.reducers.test_gates import ended, finished, gate
from tests.support import budget

T = TypeVar("T")

DELETED = (ScreenHit(ScreenKind.TEST_FILE_DELETED, "tests/test_calc.py", Count(0), "deleted"),)
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
    chooser = ScriptedChooser({"screen hits": [SCREEN_FINDINGS[i] for i in findings]})
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config, chooser, clock)
    bound = step_bound(config.budget, config.chains, loop)
    return run_in_memory(world, max_effects=bound, clock=clock).events


def screened(log: Sequence[PipelineEvent]) -> list[tuple[ScreenKind, ...]]:
    return [tuple(h.kind for h in e.hits) for e in log if isinstance(e, ChangesScreened)]


TAMPER = attrs.evolve(simulated_policy(), tamper=TamperPolicy())


def test_a_run_that_does_not_screen_records_no_base_and_screens_nothing() -> None:
    log = run_screened(simulated_policy(), ())
    assert not [e for e in log if isinstance(e, ScreenBaseRecorded | ChangesScreened)]
    assert ended(log) is TerminationReason.COMPLETED


def test_a_clean_screen_lets_the_run_complete_and_comes_before_every_gate() -> None:
    loop = attrs.evolve(TAMPER, gates=(gate("tests"),))
    log = run_screened(loop, [NOTHING_FOUND])
    kinds = [type(e) for e in log if isinstance(e, ChangesScreened | GateFinished)]
    assert kinds == [ChangesScreened, GateFinished]
    assert ended(log) is TerminationReason.COMPLETED


def test_a_tamper_hit_blocks_names_the_file_and_spends_an_iteration() -> None:
    """The first screen finds a deleted test file: the developer is told precisely, with the
    way out; the gates of that round still run; the next screen is clean: completed."""
    loop = attrs.evolve(TAMPER, gates=(gate("tests"),))
    log = run_screened(loop, [A_TAMPER_HIT, NOTHING_FOUND])
    assert screened(log) == [(ScreenKind.TEST_REMOVED,), ()]
    assert len(finished(log)) == 2  # the round's gate ran both times
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


def test_a_screen_that_never_comes_clean_never_completes() -> None:
    log = run_screened(TAMPER, [A_TAMPER_HIT] * 10, iterations=2)
    assert ended(log) is TerminationReason.MAX_ITERATIONS


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
    assert [a.base for a in asked] == [None]  # the simulated repository had no commit
    assert asked[0].scope is ScreenScope.RUN
    assert asked[0].tamper == TamperPolicy()
    started = fold(log[:3])
    assert isinstance(log[2], ScreenBaseRecorded)
    assert started.gating.base_recorded
    moved = reduce(started, ScreenBaseRecorded("a" * 40, log[3].at))
    assert moved.gating.run_base == "a" * 40
    assert moved.ledger.anomalies == 0


def test_a_screen_nobody_asked_for_is_an_anomaly_and_changes_nothing_else() -> None:
    log = run_screened(TAMPER, [NOTHING_FOUND])
    state = fold(log)
    after = reduce(state, ChangesScreened(ScreenScope.RUN, None, Count(1), DELETED, log[-1].at))
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


class _DrawnFindings(HypothesisChooser):
    """Hypothesis's choices, with the screen's findings and a gate's outcome drawn evenly."""

    def __init__(self, draw: st.DrawFn) -> None:
        super().__init__(draw)
        self._drawing = draw

    def pick(self, options: Sequence[T], what: str) -> T:
        if what in ("screen hits", "gate status"):
            return self._drawing(st.sampled_from(options), label=what)
        return super().pick(options, what)


@settings(max_examples=150, deadline=None)
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
    world = SimulatedWorld(config, _DrawnFindings(data.draw))
    result = run_in_memory(world, max_effects=step_bound(config.budget, config.chains, loop))
    assert is_complete(result.state)
    assert result.state.ledger.anomalies == 0, result.state.ledger.last_anomaly
    screens = [e for e in result.events if isinstance(e, ChangesScreened)]
    if loop.screens:
        assert len(screens) <= config.budget.max_iterations + 1
    else:
        assert not screens
    if result.state.termination is not TerminationReason.COMPLETED or not screens:
        return
    actions = {screen_action(loop, h.kind) for h in screens[-1].hits}
    assert actions <= {GateAction.WARN}, screens[-1].hits
