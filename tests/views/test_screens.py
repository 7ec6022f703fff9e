"""The screens of a run: one per ``ChangesScreened``, with the iteration it ran in and each
hit's action as the reducer gives it (laws over simulated runs, and examples)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import (
    budgets,
    chains,
    gate_specs,
    loop_policies,
    postcondition_policies,
    tamper_policies,
)
from pipeline.core.state import PipelineState, TerminationReason
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    SCREEN_FINDINGS,
    SimulatedWorld,
    WorldConfig,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    ChangesScreened,
    GateAction,
    GateStarted,
    PipelineEvent,
    PostconditionPolicy,
    RunStarted,
    ScreenKind,
    TamperPolicy,
)
from pipeline.orchestration import step_bound
from pipeline.reducers import fold, screen_action
from pipeline.reducers.views import JudgedHit, ScreenOutcome, ScreenRun, screen_runs
from tests.reducers.test_gates import gate
from tests.reducers.test_screen_round import (
    A_TAMPER_HIT,
    A_TODO,
    CUT_SHORT,
    NOTHING_FOUND,
    TAMPER,
    _DrawnFindings,
    run_screened,
)
from tests.support import WHOLE_RUNS

T = TypeVar("T")
Run = tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState]


class _Findings(_DrawnFindings):
    """The screen's findings and the gates' outcomes drawn evenly; when ``smooth``, every
    other choice the happy one, so that the run reaches final validation and screens."""

    def __init__(self, draw: st.DrawFn, smooth: bool) -> None:
        super().__init__(draw)
        self._smooth = smooth

    def pick(self, options: Sequence[T], what: str) -> T:
        if self._smooth and what not in ("screen hits", "gate status"):
            return options[0]
        return super().pick(options, what)


@st.composite
def screened_runs(draw: st.DrawFn) -> Run:
    """A whole simulated run that screens, with any gates, on the happy policy (whose runs
    reach final validation more often) or any; its screens' findings drawn evenly from the
    world's list (nothing, a tamper hit, a TODO, a screen cut short); half the runs smooth
    (no spending limit, every other choice the happy one)."""
    happy = attrs.evolve(simulated_policy(), required_events=())
    policies = st.tuples(tamper_policies(), postcondition_policies()).filter(
        lambda p: p != (None, None)
    )
    tamper, post = draw(policies, label="screen policies")
    loop = attrs.evolve(
        draw(st.just(happy) | loop_policies(), label="loop"),
        gates=draw(gate_specs()),
        tamper=tamper,
        postconditions=post,
    )
    smooth = draw(st.booleans(), label="smooth")
    limits = draw(budgets())
    if smooth:  # no spending limit: the happy agents' usage must not end the run first
        limits = attrs.evolve(
            limits,
            max_cost_usd=None,
            max_tokens=None,
            max_cost_without_progress_usd=None,
            role_max_cost_usd=(),
        )
    config = WorldConfig(budget=limits, chains=draw(chains()), loop=loop)
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=_Findings(draw, smooth), clock=clock)
    bound = step_bound(config.budget, config.chains, loop)
    result = run_in_memory(world, options=RunOptions(max_effects=bound, clock=clock))
    return config, result.events, result.state


@WHOLE_RUNS
@given(run=screened_runs(), data=st.data())
def test_every_screen_is_one_entry_with_its_iteration_and_the_reducers_actions(
    run: Run, data: st.DataObject
) -> None:
    """For a whole run or any prefix: entries numbered in order, one per ChangesScreened,
    each with its time, scope, base, files and hits, the iteration the run was at, and every
    hit's action what the reducer gives it under the policy RunStarted recorded. And a run
    stops on its screen exactly when its last screen stopped before any gate (one test:
    drawing the runs is its cost)."""
    _stops_exactly_when_its_last_screen_stopped(run)
    _config, log, _final = run
    log = log[: data.draw(st.integers(0, len(log)), label="prefix")]
    screens = screen_runs(log)
    indexes = [i for i, e in enumerate(log) if isinstance(e, ChangesScreened)]
    assert [s.number for s in screens] == list(range(1, len(indexes) + 1))
    started = next((e for e in log if isinstance(e, RunStarted)), None)
    for screen, index in zip(screens, indexes, strict=True):
        event = log[index]
        assert isinstance(event, ChangesScreened)
        assert (screen.at, screen.scope, screen.base, screen.files) == (
            event.at,
            event.scope,
            event.base,
            event.files,
        )
        assert tuple(h.hit for h in screen.hits) == event.hits
        assert started is not None
        assert [h.action for h in screen.hits] == [
            screen_action(started.loop, h.kind) for h in event.hits
        ]
        assert screen.iteration == fold(log[:index]).progress.iteration


def _stops_exactly_when_its_last_screen_stopped(run: Run) -> None:
    """The view and the reducer agree: a screen that stopped is the run's last, no gate ran
    after it and the run ended ``gate_failed``; the hits are the ones the reducer counted."""
    _config, log, final = run
    screens = screen_runs(log)
    assert sum(len(s.hits) for s in screens) == final.gating.hits
    stopped = [s for s in screens if s.outcome is ScreenOutcome.STOPPED]
    if not stopped:
        return
    assert stopped == [screens[-1]]
    assert final.progress.termination is TerminationReason.GATE_FAILED
    after = [e for e in log if e.at > stopped[0].at]
    assert not [e for e in after if isinstance(e, GateStarted)]


def test_a_blocked_screen_then_clean_ones_are_entries_in_later_iterations() -> None:
    """A tamper hit blocks its round; the screens after it, an iteration later, are clean.
    The simulated repository had no commit: the base is the empty tree. (How many screens
    a run has depends on the boundaries it screens at: only the first and last are named.)"""
    log = run_screened(attrs.evolve(TAMPER, gates=(gate("tests"),)), [A_TAMPER_HIT, NOTHING_FOUND])
    first, *_, last = screen_runs(log)
    assert first.outcome is ScreenOutcome.BLOCKED
    assert [(h.hit.kind, h.where, h.action) for h in first.hits] == [
        (ScreenKind.TEST_REMOVED, "tests/test_app.py", GateAction.BLOCK)
    ]
    assert (last.outcome, last.hits) == (ScreenOutcome.CLEAN, ())
    assert last.iteration > first.iteration
    assert (first.base, first.short_base) == (None, "empty tree")


def test_a_postcondition_warns_by_the_postconditions_and_a_cut_short_screen_only_warns() -> None:
    """A TODO acts by ``[postconditions]`` (warn) though the tamper policy stops; a screen cut
    short at its file limit warns whatever the policies say."""
    loop = attrs.evolve(
        simulated_policy(),
        tamper=TamperPolicy(on_hit=GateAction.STOP),
        postconditions=PostconditionPolicy(on_failure=GateAction.WARN),
    )
    todo = screen_runs(run_screened(loop, [A_TODO]))[0]
    assert [(h.where, h.action) for h in todo.hits] == [("src/app.py:3", GateAction.WARN)]
    assert todo.outcome is ScreenOutcome.WARNED
    cut = screen_runs(run_screened(loop, [CUT_SHORT]))[0]
    assert [h.action for h in cut.hits] == [GateAction.WARN]


def test_a_stop_outweighs_a_block_and_a_warning() -> None:
    """A screen's outcome is its strongest hit's action."""
    clean = screen_runs(run_screened(TAMPER, [NOTHING_FOUND]))[0]
    (hit,) = SCREEN_FINDINGS[A_TODO]

    def judged(*actions: GateAction) -> ScreenRun:
        return attrs.evolve(clean, hits=tuple(JudgedHit(hit=hit, action=a) for a in actions))

    assert judged().outcome is ScreenOutcome.CLEAN
    assert judged(GateAction.WARN).outcome is ScreenOutcome.WARNED
    assert judged(GateAction.WARN, GateAction.BLOCK).outcome is ScreenOutcome.BLOCKED
    assert judged(GateAction.STOP, GateAction.BLOCK).outcome is ScreenOutcome.STOPPED


def test_a_long_base_is_shown_by_its_first_twelve_characters() -> None:
    screen = screen_runs(run_screened(TAMPER, [NOTHING_FOUND]))[0]
    assert attrs.evolve(screen, base="0123456789abcdef" * 2).short_base == "0123456789ab"


def test_a_run_that_does_not_screen_has_no_screen() -> None:
    """No ``[tamper]`` nor ``[postconditions]``: nothing to show."""
    assert screen_runs(run_screened(simulated_policy(), ())) == ()
    assert screen_runs(()) == ()
