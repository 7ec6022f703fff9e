"""The gate runs: one per ``GateStarted``, ended by what the log says ended it, with the action
the recorded policy gives a failure (properties over simulated runs, and examples)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import budgets, chains, gate_specs, loop_policies, simulated_runs
from pipeline.core.state import PipelineState
from pipeline.engine.simulation import (
    WorldConfig,
    simulated_policy,
)
from pipeline.events import (
    GateAction,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    PipelineEvent,
    RunResumed,
    RunStarted,
    TerminationReason,
)
from pipeline.reducers import fold
from pipeline.reducers.views import GateOutcome, GateRun, ScreenOutcome, gate_runs, screen_runs
from tests.support import WHOLE_RUNS, budget, gate_spec, scripted_run

_ACTION_OUTCOME = {
    GateAction.BLOCK: GateOutcome.BLOCKED,
    GateAction.WARN: GateOutcome.WARNED,
    GateAction.STOP: GateOutcome.STOPPED,
}


def _gated_configs() -> st.SearchStrategy[WorldConfig]:
    """Simulated configurations with one to three gates, on the happy policy (whose runs reach
    final validation more often) or on any policy."""
    happy = attrs.evolve(simulated_policy(), required_events=())
    policies = st.just(happy) | loop_policies()
    loops = st.builds(lambda p, g: attrs.evolve(p, gates=g), policies, gate_specs().filter(bool))
    return st.builds(WorldConfig, budget=budgets(), chains=chains(), loop=loops)


def _policy_of(log: Sequence[PipelineEvent]) -> dict[str, GateAction]:
    started = next((e for e in log if isinstance(e, RunStarted)), None)
    return {} if started is None else {g.name: g.on_failure for g in started.loop.gates}


@WHOLE_RUNS
@given(run=simulated_runs(_gated_configs()), data=st.data())
def test_every_gate_start_is_one_run_ended_by_its_report(
    run: tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState], data: st.DataObject
) -> None:
    """For a whole run or any prefix: runs numbered in order, one per GateStarted, each with
    the gate, boundary and iteration it started at; a reported run has its GateFinished's
    status, exit code and log, and a failure the action its recorded gate gives it; only the
    last run can still be at work. And the whole run stops on a gate exactly when its last
    gate run stopped it (one test: drawing the runs is its cost)."""
    _stops_exactly_when_its_last_gate_run_stopped_it(run)
    _config, log, _final = run
    log = log[: data.draw(st.integers(0, len(log)), label="prefix")]
    runs = gate_runs(log)
    starts = [i for i, e in enumerate(log) if isinstance(e, GateStarted)]
    assert [r.number for r in runs] == list(range(1, len(starts) + 1))
    actions = _policy_of(log)
    for gate_run, index in zip(runs, starts, strict=True):
        started = log[index]
        assert isinstance(started, GateStarted)
        assert (gate_run.gate, gate_run.boundary, gate_run.started_at) == (
            started.gate,
            started.boundary,
            started.at,
        )
        assert gate_run.iteration == fold(log[:index]).progress.iteration
        finished = next((e for e in log[index + 1 :] if isinstance(e, GateFinished)), None)
        if finished is None:
            assert gate_run.outcome is GateOutcome.RUNNING
            assert gate_run.ended_at is None
            assert gate_run.duration_s is None
            continue
        assert gate_run.status is finished.status
        assert gate_run.exit_code == finished.exit_code
        assert gate_run.log_path == finished.log_path
        assert gate_run.duration_s == finished.duration_ms / 1000
        if finished.status is GateStatus.PASSED:
            assert (gate_run.action, gate_run.outcome) == (None, GateOutcome.PASSED)
        else:
            action = actions.get(finished.gate, GateAction.BLOCK)
            assert (gate_run.action, gate_run.outcome) == (action, _ACTION_OUTCOME[action])
    assert all(r.outcome is not GateOutcome.RUNNING for r in runs[:-1])


def _stops_exactly_when_its_last_gate_run_stopped_it(
    run: tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState],
) -> None:
    """The view and the reducer agree: a whole run ended ``gate_failed`` if and only if its
    last gate run's outcome is ``stopped`` (or a screen's hit stopped it), and no earlier run
    stopped; every reported run is one the reducer counted."""
    _config, log, final = run
    runs = gate_runs(log)
    stopped = [r for r in runs if r.outcome is GateOutcome.STOPPED]
    screen_stopped = any(s.outcome is ScreenOutcome.STOPPED for s in screen_runs(log))
    reason = final.progress.termination
    assert (reason is TerminationReason.GATE_FAILED) == (bool(stopped) or screen_stopped)
    if stopped:
        assert stopped == [runs[-1]]
        assert not screen_stopped
    assert sum(r.status is not None for r in runs) == final.gating.ran


def _gated_log(*statuses: GateStatus, on_failure: GateAction) -> tuple[PipelineEvent, ...]:
    """A simulated run with one ``tests`` gate whose commands end ``statuses`` in turn."""
    answers: dict[str, list[object]] = {"gate status": list(statuses)}
    run = scripted_run(answers, budget_=budget(max_iterations=4), gates=(gate_spec(on_failure),))
    return tuple(run.events)


def test_a_blocking_failure_then_a_pass_are_two_runs_in_their_iterations() -> None:
    """A failing blocking gate sends the work back: its run is blocked, and the next round's
    run, an iteration later, passes."""
    runs = gate_runs(_gated_log(GateStatus.FAILED, GateStatus.PASSED, on_failure=GateAction.BLOCK))
    assert [(r.gate, r.status, r.action, r.outcome) for r in runs] == [
        ("tests", GateStatus.FAILED, GateAction.BLOCK, GateOutcome.BLOCKED),
        ("tests", GateStatus.PASSED, None, GateOutcome.PASSED),
    ]
    assert runs[1].iteration == runs[0].iteration + 1
    assert all(r.boundary is GateBoundary.FINAL for r in runs)


def test_a_warning_failure_is_warned_and_a_timeout_stops_a_stopping_gate() -> None:
    """The action is the recorded gate's ``on_failure``, whatever the failure was."""
    warned = gate_runs(_gated_log(GateStatus.FAILED, on_failure=GateAction.WARN))
    assert [r.outcome for r in warned] == [GateOutcome.WARNED]
    stopped = gate_runs(_gated_log(GateStatus.TIMED_OUT, on_failure=GateAction.STOP))
    assert [(r.status, r.exit_code, r.outcome) for r in stopped] == [
        (GateStatus.TIMED_OUT, None, GateOutcome.STOPPED)
    ]


def _crashed_in_the_gate(log: tuple[PipelineEvent, ...]) -> tuple[PipelineEvent, ...]:
    """``log`` as a kill -9 during its first gate leaves it, resumed: the gate's start, the
    resumption, then the gate run again whole."""
    index = next(i for i, e in enumerate(log) if isinstance(e, GateStarted))
    started = log[index]
    assert isinstance(started, GateStarted)
    later = started.at + timedelta(seconds=30)
    resumed = RunResumed(checkpoint_sequence=None, at=later)
    again = attrs.evolve(started, at=later)
    rest = tuple(attrs.evolve(e, at=e.at + timedelta(seconds=30)) for e in log[index + 1 :])
    return (*log[: index + 1], resumed, again, *rest)


def test_a_gate_the_run_crashed_in_is_cut_short_and_the_resume_runs_it_again() -> None:
    """The started gate ends cut short at the resumption, with no status or action; the
    gate run again is a run of its own."""
    log = _crashed_in_the_gate(_gated_log(GateStatus.PASSED, on_failure=GateAction.BLOCK))
    first, second = gate_runs(log)
    resumed = next(e for e in log if isinstance(e, RunResumed))
    assert first.outcome is GateOutcome.CUT_SHORT
    assert (first.ended_at, first.status, first.action) == (resumed.at, None, None)
    assert first.duration_s == 30.0
    assert (second.number, second.outcome) == (2, GateOutcome.PASSED)


def test_a_log_that_ends_in_a_gate_shows_it_running() -> None:
    """The last fact is the gate's start: the run is at work, with no end."""
    log = _gated_log(GateStatus.PASSED, on_failure=GateAction.BLOCK)
    cut = next(i for i, e in enumerate(log) if isinstance(e, GateStarted)) + 1
    (running,) = gate_runs(log[:cut])
    assert running == GateRun(
        number=1,
        gate="tests",
        boundary=GateBoundary.FINAL,
        iteration=running.iteration,
        started_at=log[cut - 1].at,
    )
    assert running.outcome is GateOutcome.RUNNING


def test_a_run_without_gates_has_no_gate_run() -> None:
    """No gate, no run: the report then shows no gates section."""
    assert gate_runs(scripted_run().events) == ()
    assert gate_runs(()) == ()
