"""The merge queue's pure core and its loop: the integration facts folded, and the landing
(:func:`~pipeline.engine.integrate`) ending within its bound whatever git and the gates
report."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from attrs import evolve
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pipeline.app.testing import simulated_runs
from pipeline.core.state import MAX_REPLAYS, IntegrationStatus, Phase, PipelineState
from pipeline.engine import integrate
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
    RunId,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import MemoryEventStore
from pipeline.orchestration import integration_gates, landing_pinned_to
from pipeline.reducers import reduce

AT = Instant(datetime(2026, 11, 27, tzinfo=UTC))
RUN = RunId("run-x")

Draw = Callable[[st.SearchStrategy[tuple[PipelineEvent, ...]]], tuple[PipelineEvent, ...]]


class _World:
    """The landing's steps as a world that reports whatever ``draw`` picks, counting them."""

    def __init__(self, draw: Draw) -> None:
        self.draw = draw
        self.steps = 0
        self.resolvers: list[AgentName] = []

    def replay(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        self.steps += 1
        now, n = state.integration, self.steps
        assert now is not None
        rebased = IntegrationRebased(onto=f"onto{n}", tip="tip", head=f"head{n}", at=AT)
        done: tuple[PipelineEvent, ...] = (rebased,)
        if now.status is IntegrationStatus.RESOLVING and now.resolver is not None:
            self.resolvers.append(now.resolver)
            done = (IntegrationResolved(agent=now.resolver, paths=("a.txt",), at=AT), rebased)
        conflicted = IntegrationConflicted(onto=f"onto{n}", paths=("a.txt",), at=AT)
        failed = IntegrationFailed(reason="git failed", at=AT)
        return self.draw(st.sampled_from([done, (conflicted,), (failed,)]))

    def gate(self, state: PipelineState, gate: GateSpec) -> tuple[PipelineEvent, ...]:
        self.steps += 1
        assert state.integration is not None
        assert state.integration.head is not None
        head = state.integration.head
        return self.draw(
            st.sampled_from(GateStatus).map(
                lambda status: (
                    IntegrationGated(
                        gate=gate.name,
                        head=head,
                        status=status,
                        exit_code=ExitCode(0 if status is GateStatus.PASSED else 1),
                        tail="",
                        at=AT,
                    ),
                )
            )
        )

    def move(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        self.steps += 1
        now, n = state.integration, self.steps
        assert now is not None
        assert now.onto is not None
        assert now.head is not None
        return self.draw(
            st.sampled_from(
                [
                    (TargetAdvanced(target=now.target, old=now.onto, new=now.head, at=AT),),
                    (TargetMoved(expected=now.onto, found=f"other{n}", at=AT),),
                    (IntegrationFailed(reason="changes in the way", at=AT),),
                ]
            )
        )


def _stored(log: tuple[PipelineEvent, ...]) -> MemoryEventStore:
    """A store holding ``log`` as run ``RUN``'s."""
    store = MemoryEventStore()
    store.append(RUN, 0, log)
    return store


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs(), st.data())
def test_an_integration_ends_within_its_bound_whatever_the_world_reports(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState], data: st.DataObject
) -> None:
    """The landing's loop, over whatever each step reports, takes at most ``MAX_REPLAYS`` x
    (2 + resolvers + gates) steps, lands only with every gate passed, and stops for a person
    only after each resolver had its turn."""
    _config, log, state = run
    assume(state.phase is Phase.COMPLETE)
    drawn = data.draw(st.lists(st.sampled_from(["m1", "m2"]), max_size=2, unique=True))
    resolvers = tuple(AgentName(name) for name in drawn)
    queued = IntegrationQueued(branch="ralph/run-x", target="main", resolvers=resolvers, at=AT)
    world = _World(data.draw)
    state = integrate(_stored(log), world, RUN, redactor=Redactor({}), queued=queued)
    assert world.steps <= MAX_REPLAYS * (2 + len(resolvers) + len(integration_gates(state)))
    assert set(world.resolvers) <= set(resolvers)
    assert state.integration is not None
    assert not state.integration.status.under_way
    if state.integration.status is IntegrationStatus.LANDED:
        assert set(state.integration.passed) == {g.name for g in integration_gates(state)}
    if state.integration.status is IntegrationStatus.CONFLICTED:
        assert state.integration.tried == len(resolvers)  # each had its turn first


class _Calm(_World):
    """A world where every step goes well, naming each step it is asked for."""

    def __init__(self) -> None:
        super().__init__(lambda _strategy: ())
        self.asked: list[str] = []

    def replay(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        self.asked.append("replay")
        return (IntegrationRebased(onto="o", tip="tip", head="h", at=AT),)

    def gate(self, state: PipelineState, gate: GateSpec) -> tuple[PipelineEvent, ...]:
        self.asked.append(gate.name)
        passed, code = GateStatus.PASSED, ExitCode(0)
        return (IntegrationGated(gate=gate.name, head="h", status=passed, exit_code=code,
                                 tail="", at=AT),)  # fmt: skip

    def move(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        self.asked.append("move")
        return (TargetAdvanced(target="main", old="o", new="h", at=AT),)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs())
def test_a_landing_replays_then_runs_every_final_gate_in_order_then_moves(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState],
) -> None:
    """The target moves only after each of the run's final gates passed on the replayed
    head, in the run's order, one step each."""
    _config, log, state = run
    assume(state.phase is Phase.COMPLETE and integration_gates(state))
    world = _Calm()
    queued = IntegrationQueued(branch="b", target="main", resolvers=(), at=AT)
    state = integrate(_stored(log), world, RUN, redactor=Redactor({}), queued=queued)
    assert world.asked == ["replay", *(g.name for g in integration_gates(state)), "move"]
    assert state.integration is not None
    assert state.integration.status is IntegrationStatus.LANDED


def test_only_a_complete_run_integrates() -> None:
    started = PipelineState()
    queued = reduce(started, IntegrationQueued(branch="b", target="main", resolvers=(), at=AT))
    assert queued.integration is None
    assert queued.ledger.anomalies == 1


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(simulated_runs(), st.data())
def test_a_replay_onto_a_moving_target_is_retried_then_fails(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState], data: st.DataObject
) -> None:
    """A target moved under each replay costs a replay, up to ``MAX_REPLAYS``, then the
    integration fails; asked again, it starts over, and one under way is not queued twice."""
    _config, log, state = run
    assume(state.phase is Phase.COMPLETE and not integration_gates(state))
    moves: list[tuple[str | None, str | None, str | None]] = []

    class Busy(_World):
        """Each replay onto ``o<n>`` gives ``h<n>``, and each move finds the target moved."""

        def replay(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
            n = len(moves)
            return (IntegrationRebased(onto=f"o{n}", tip="tip", head=f"h{n}", at=AT),)

        def move(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
            now = state.integration
            assert now is not None
            assert now.onto is not None
            moves.append((now.onto, now.head, now.tip))
            return (TargetMoved(expected=now.onto, found=f"x{len(moves)}", at=AT),)

    queued = IntegrationQueued(branch="b", target="main", resolvers=(), at=AT)
    store = _stored(log)
    state = integrate(store, Busy(data.draw), RUN, redactor=Redactor({}), queued=queued)
    assert moves == [(f"o{n}", f"h{n}", "tip") for n in range(MAX_REPLAYS)]
    assert state.integration is not None
    assert state.integration.status is IntegrationStatus.FAILED
    assert integrate(store, Busy(data.draw), RUN, redactor=Redactor({})) == state  # no step
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
    pinned = landing_pinned_to(state)
    assert pinned == ("0" * 40 if pin is GatePin.BASE else None)
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
