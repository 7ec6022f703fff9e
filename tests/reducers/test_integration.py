"""The merge queue's pure core: the integration facts folded, and the integrator's loop
ending within its bound whatever git and the gates report."""

from __future__ import annotations

from datetime import UTC, datetime

from attrs import evolve
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pipeline.app.testing import simulated_runs
from pipeline.core.effects import GateReplayed, IntegrationEffect, MoveTarget, ReplayBranch
from pipeline.core.state import MAX_REPLAYS, IntegrationStatus, Phase, PipelineState
from pipeline.events import (
    AgentName,
    Count,
    ExitCode,
    GatePin,
    GateSpec,
    GateStatus,
    Instant,
    IntegrationConflicted,
    IntegrationFailed,
    IntegrationGated,
    IntegrationQueued,
    IntegrationRebased,
    IntegrationResolved,
    PipelineEvent,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.orchestration import integration_gates, next_integration_effect
from pipeline.reducers import reduce

AT = Instant(datetime(2026, 11, 27, tzinfo=UTC))


def _outcomes(effect: IntegrationEffect, n: int) -> st.SearchStrategy[tuple[PipelineEvent, ...]]:
    """What a handler may report for ``effect`` (the ``n``-th, for fresh shas)."""
    rebased = IntegrationRebased(onto=f"onto{n}", tip="tip", head=f"head{n}", at=AT)
    failed = IntegrationFailed(reason="git failed", at=AT)
    match effect:
        case ReplayBranch():
            done: tuple[PipelineEvent, ...] = (rebased,)
            if effect.resolver is not None:
                done = (
                    IntegrationResolved(agent=effect.resolver, paths=("a.txt",), at=AT),
                    rebased,
                )
            conflicted = IntegrationConflicted(onto=f"onto{n}", paths=("a.txt",), at=AT)
            return st.sampled_from([done, (conflicted,), (failed,)])
        case GateReplayed():
            return st.sampled_from(GateStatus).map(
                lambda status: (
                    IntegrationGated(
                        gate=effect.gate,
                        head=effect.head,
                        status=status,
                        exit_code=ExitCode(0 if status is GateStatus.PASSED else 1),
                        tail="",
                        at=AT,
                    ),
                )
            )
        case MoveTarget():
            return st.sampled_from(
                [
                    (TargetAdvanced(target=effect.target, old=effect.old, new=effect.new, at=AT),),
                    (TargetMoved(expected=effect.old, found=f"other{n}", at=AT),),
                    (IntegrationFailed(reason="changes in the way", at=AT),),
                ]
            )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs(), st.data())
def test_an_integration_ends_within_its_bound_whatever_the_world_reports(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState], data: st.DataObject
) -> None:
    _config, _log, state = run
    assume(state.phase is Phase.COMPLETE)
    drawn = data.draw(st.lists(st.sampled_from(["m1", "m2"]), max_size=2, unique=True))
    resolvers = tuple(AgentName(name) for name in drawn)
    state = reduce(
        state, IntegrationQueued(branch="ralph/run-x", target="main", resolvers=resolvers, at=AT)
    )
    assert state.integration is not None
    assert state.integration.status is IntegrationStatus.QUEUED
    bound = MAX_REPLAYS * (2 + len(resolvers) + len(integration_gates(state)))
    steps = 0
    while (effect := next_integration_effect(state)) is not None:
        steps += 1
        assert steps <= bound
        if isinstance(effect, ReplayBranch) and effect.resolver is not None:
            assert effect.resolver in resolvers
        before = state.integration
        for fact in data.draw(_outcomes(effect, steps)):
            state = reduce(state, fact)
        assert state.integration != before  # every fitting report moves it on
    assert state.integration is not None
    assert not state.integration.status.under_way
    if state.integration.status is IntegrationStatus.LANDED:
        assert set(state.integration.passed) == {g.name for g in integration_gates(state)}
    if state.integration.status is IntegrationStatus.CONFLICTED:
        assert state.integration.tried == len(resolvers)  # each had its turn first


def test_only_a_complete_run_integrates() -> None:
    started = PipelineState()
    queued = reduce(started, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT))
    assert queued.integration is None
    assert queued.ledger.anomalies == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs())
def test_a_replay_onto_a_moving_target_is_retried_then_fails(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState],
) -> None:
    _config, _log, state = run
    assume(state.phase is Phase.COMPLETE and not integration_gates(state))
    state = reduce(state, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT))
    for n in range(MAX_REPLAYS):
        effect = next_integration_effect(state)
        assert isinstance(effect, ReplayBranch)
        state = reduce(state, IntegrationRebased(onto=f"o{n}", tip="tip", head=f"h{n}", at=AT))
        moving = next_integration_effect(state)
        assert isinstance(moving, MoveTarget)
        assert (moving.old, moving.new, moving.tip) == (f"o{n}", f"h{n}", "tip")
        state = reduce(state, TargetMoved(expected=f"o{n}", found=f"x{n}", at=AT))
    assert state.integration is not None
    assert state.integration.status is IntegrationStatus.FAILED
    assert next_integration_effect(state) is None
    again = reduce(
        state, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT)
    )  # a person asks again
    assert again.integration is not None
    assert (again.integration.status, again.integration.replays) == (IntegrationStatus.QUEUED, 0)
    landed = reduce(
        reduce(again, IntegrationRebased(onto="o", tip="t", head="h", at=AT)),
        TargetAdvanced(target="main", old="o", new="h", at=AT),
    )
    assert landed.integration is not None
    assert landed.integration.status is IntegrationStatus.LANDED
    busy = reduce(
        again, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT)
    )  # one under way: not twice
    assert busy.integration == again.integration
    assert busy.ledger.anomalies == again.ledger.anomalies + 1


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs(), st.sampled_from(GatePin))
def test_the_replays_gates_are_pinned_to_the_targets_head_unless_the_run_opted_out(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState], pin: GatePin
) -> None:
    """A replayed head's gate takes the person's checks from the target's head it was
    replayed onto (not the run's base: the person's later commits count), only when the run
    recorded ``pin = "base"``; a failure's reason names the files the branch was refused,
    a pass keeps them for the landing's line, and a new replay forgets them."""
    _config, _log, state = run
    assume(state.phase is Phase.COMPLETE and state.run is not None)
    tests = GateSpec(name="tests", argv=("pytest",), timeout_s=Count(60))
    loop = evolve(state.run.loop, gates=(tests,), pin=pin)
    state = evolve(state, run=evolve(state.run, loop=loop))
    state = reduce(state, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT))
    state = reduce(state, IntegrationRebased(onto="0" * 40, tip="tip", head="head", at=AT))
    effect = next_integration_effect(state)
    assert isinstance(effect, GateReplayed)
    assert effect.pin_base == ("0" * 40 if pin is GatePin.BASE else None)
    pinned = effect.pin_base
    restored = ("tests/test_calc.py",) if pinned else ()
    gated = {
        "gate": "tests", "head": "head", "tail": "", "pinned": pinned, "restored": restored,
        "at": AT,
    }  # fmt: skip
    passed = reduce(
        state, IntegrationGated(status=GateStatus.PASSED, exit_code=ExitCode(0), **gated)
    )
    assert passed.integration is not None
    assert (passed.integration.pinned, passed.integration.restored) == (pinned, restored)
    moved = reduce(passed, TargetMoved(expected="0" * 40, found="1" * 40, at=AT))
    assert moved.integration is not None
    assert (moved.integration.pinned, moved.integration.restored) == (None, ())
    failed = reduce(
        state, IntegrationGated(status=GateStatus.FAILED, exit_code=ExitCode(1), **gated)
    )
    assert failed.integration is not None
    assert failed.integration.status is IntegrationStatus.FAILED
    said = (
        f"; it ran pinned to main's {'0' * 12}, with main's tests/test_calc.py: the branch's "
        "changes to them were not used"
    )
    assert failed.integration.reason == "gate tests failed (exit 1) on the replayed head" + (
        said if pinned else ""
    )
