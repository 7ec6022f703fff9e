"""The durable runner: facts committed before the next effect, checkpoints, resume."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pipeline.app.testing import HypothesisChooser, world_configs
from pipeline.core.effects import Effect, InvokeAgent
from pipeline.core.serialization import checkpoint_state
from pipeline.core.state import Phase, PipelineState, TerminationReason, is_complete
from pipeline.engine import (
    HandlerRegistry,
    Interruption,
    MissingHandlerError,
    RunObserver,
    RunOptions,
    RunWorld,
    load_state,
    run_durable,
    run_in_memory,
)
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    CheckpointSaved,
    Instant,
    InvocationStarted,
    PipelineEvent,
    RunCompleted,
    RunId,
    RunInterrupted,
    RunResumed,
    SandboxChecked,
    SandboxMode,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import Folded, MemoryEventStore, SqliteEventStore, UnknownRunError
from pipeline.reducers import fold
from tests.simulation.invariants import check_state
from tests.support import budget

T = Instant(datetime(2026, 6, 1, tzinfo=UTC))


def _frozen_clock() -> Instant:
    return T


def _world(answers: dict[str, list[object]] | None = None) -> SimulatedWorld:
    # Nothing required: its agents never publish review.passed, and the completion gate
    # (which now stands on every way to success) would rightly keep the run from completing.
    loop = attrs.evolve(simulated_policy(), required_events=())
    config = WorldConfig(
        budget=budget(),
        chains=default_chains(("claude", "codex")),
        rebase_onto=None,
        run_id="durable-1",
        loop=loop,
    )
    return SimulatedWorld(
        config=config,
        chooser=ScriptedChooser(answers=dict(answers or {})),
        clock=fake_clock(step=timedelta(0), start=T),
    )


@pytest.fixture
def store(tmp_path: Path) -> SqliteEventStore:
    with SqliteEventStore(WorkspaceLayout(root=tmp_path).store) as opened:
        yield opened  # type: ignore[misc]


def test_a_durable_run_records_the_same_facts_as_the_in_memory_loop(
    store: SqliteEventStore,
) -> None:
    """Same world, same clock: the stored log is the in-memory run's log, and folds to it."""
    durable = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock))
    memory = run_in_memory(_world(), options=RunOptions(clock=_frozen_clock))
    stored = list(store.read(durable.run_id))
    assert stored == list(memory.events)
    assert fold(stored) == durable.state == memory.state
    assert durable.state.phase is Phase.COMPLETE


class _RecordingStore(MemoryEventStore):
    """A memory store that keeps what each append was handed, as it was handed."""

    def __init__(self) -> None:
        super().__init__()
        self.handed: list[Sequence[PipelineEvent]] = []

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        self.handed.append(events)
        return super().append(run_id, expected_sequence, events, flush=flush)


def test_the_engine_hands_the_store_its_facts_folded() -> None:
    """Every append of a run, a new one and a resumed one, is a ``Folded`` whose states are the
    fold of its facts from the log's head, so the store's projections never fold them again."""
    store = _RecordingStore()
    first = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock, max_effects=9))
    second = run_durable(
        store, _world(), run_id=first.run_id, options=RunOptions(clock=_frozen_clock)
    )
    assert len(store.handed) > 9
    state = PipelineState()
    for facts in store.handed:
        assert isinstance(facts, Folded)
        assert facts.before == state
        assert list(facts.states) == [fold(facts[: i + 1], state) for i in range(len(facts))]
        state = facts.after
    assert state == second.state == fold(store.read(first.run_id))


def test_every_checkpoint_equals_the_fold_of_the_log_up_to_it(store: SqliteEventStore) -> None:
    """checkpoint(k) == fold(log[:k]) and checkpoint(k) + fold(tail) == fold(all)."""
    run = run_durable(
        store, _world({"iteration status": ["partial"]}), options=RunOptions(clock=_frozen_clock)
    )
    log = list(store.read(run.run_id))
    saved = store.checkpoints(run.run_id)
    assert len(saved) == run.state.checkpoints.count >= 5
    for checkpoint in saved:
        state = checkpoint_state(checkpoint, "test")
        assert state == fold(log[: checkpoint.sequence])
        assert fold(log[checkpoint.sequence :], state) == fold(log)


def test_a_stopped_run_resumes_from_its_latest_checkpoint_and_completes(
    store: SqliteEventStore,
) -> None:
    """Stop after a few effects; resuming records RunResumed and finishes the run."""
    first = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock, max_effects=12))
    assert not is_complete(first.state)
    second = run_durable(
        store, _world(), run_id=first.run_id, options=RunOptions(clock=_frozen_clock)
    )
    assert second.resumed_from is not None
    log = list(store.read(first.run_id))
    assert sum(isinstance(e, RunResumed) for e in log) == 1
    assert second.state == fold(log)
    assert second.state.termination is TerminationReason.COMPLETED


def test_what_a_resumed_run_goes_on_in_is_recorded_right_after_its_resumption(
    store: SqliteEventStore,
) -> None:
    """The world's facts on a resume (the runtime's: what its agents run in now) follow
    RunResumed, secrets masked as every handler's facts are; a new run asks for none."""
    checked = SandboxChecked(
        mode=SandboxMode.AUTO,
        on=False,
        said="off (token sk-ant-abcdefghijklmnop1234)",
        endpoints=(),
        withheld=(),
        at=T,
    )
    asked: list[str] = []

    class Resumes(RunWorld):
        def resumed(self) -> tuple[PipelineEvent, ...]:
            asked.append("resume")
            return (checked,)

    clocked = RunOptions(clock=_frozen_clock)
    first = run_durable(
        store, _world(), world=Resumes(), options=attrs.evolve(clocked, max_effects=12)
    )
    assert asked == []
    second = run_durable(store, _world(), run_id=first.run_id, world=Resumes(), options=clocked)
    assert asked == ["resume"]
    log = list(store.read(first.run_id))
    at = next(i for i, e in enumerate(log) if isinstance(e, RunResumed))
    recorded = log[at + 1]
    assert isinstance(recorded, SandboxChecked)
    assert recorded.on is False
    assert recorded.said.startswith("off (token ")
    assert "sk-ant-abcdefghijklmnop1234" not in recorded.said
    assert second.state == fold(log)
    assert second.state.termination is TerminationReason.COMPLETED


def test_resuming_a_complete_run_does_nothing(store: SqliteEventStore) -> None:
    """A finished run is left as it is: no RunResumed, no effect."""
    done = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock))
    head = store.head(done.run_id)
    again = run_durable(
        store, _world(), run_id=done.run_id, options=RunOptions(clock=_frozen_clock)
    )
    assert again.effects == 0
    assert store.head(done.run_id) == head


def test_resuming_an_unknown_run_is_an_error(store: SqliteEventStore) -> None:
    """No such run: UnknownRunError naming it (one name for one concept, as the stores say it)."""
    with pytest.raises(UnknownRunError, match="nope"):
        run_durable(store, _world(), run_id=RunId("nope"))


def _corrupt_newest_checkpoint(path: Path, run_id: str, column: str, value: object) -> int:
    db = sqlite3.connect(path)
    (sequence,) = db.execute(
        "SELECT max(sequence) FROM checkpoints WHERE run_id = ?", (run_id,)
    ).fetchone()
    db.execute(
        f"UPDATE checkpoints SET {column} = ? WHERE run_id = ? AND sequence = ?",
        (value, run_id, sequence),
    )
    db.commit()
    db.close()
    return int(sequence)


def test_a_corrupted_checkpoint_is_reported_and_the_log_replayed(tmp_path: Path) -> None:
    """A flipped byte fails the checksum: a warning, and the state comes from the log."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        run = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock))
        body = bytearray(store.checkpoints(run.run_id)[0].body)
    body[len(body) // 2] ^= 0x01
    newest = _corrupt_newest_checkpoint(path, run.run_id, "body", bytes(body))
    warnings: list[str] = []
    with SqliteEventStore(path) as store:
        state, used = load_state(store, run.run_id, warnings.append)
        assert state == fold(store.read(run.run_id))
    assert used is not None
    assert used < newest
    assert len(warnings) == 1
    assert "checksum mismatch" in warnings[0]
    assert "rebuilding from the event log" in warnings[0]


def test_a_checkpoint_of_an_unknown_format_is_skipped(tmp_path: Path) -> None:
    """A checkpoint from a future release is reported and ignored."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        run = run_durable(store, _world(), options=RunOptions(clock=_frozen_clock))
    _corrupt_newest_checkpoint(path, run.run_id, "format_version", 99)
    warnings: list[str] = []
    with SqliteEventStore(path) as store:
        state, _ = load_state(store, run.run_id, warnings.append)
        assert state == fold(store.read(run.run_id))
    assert "unknown checkpoint format 99" in warnings[0]


def test_a_registry_routes_by_effect_type_and_names_a_missing_handler() -> None:
    """Embedders replace one handler; an effect with no handler is a clear error."""
    world = _world()
    calls: list[str] = []

    def agents(effect: object) -> list[object]:
        calls.append(type(effect).__name__)
        return list(world(effect))  # type: ignore[arg-type]

    registry = HandlerRegistry({InvokeAgent: agents}, fallback=world)  # type: ignore[dict-item]
    result = run_in_memory(registry)
    assert result.state.phase is Phase.COMPLETE
    assert set(calls) == {"InvokeAgent"}
    with pytest.raises(MissingHandlerError, match="StartRun"):
        run_in_memory(HandlerRegistry())


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=world_configs(), data=st.data(), stop_after=st.integers(1, 60))
def test_stopping_and_resuming_anywhere_gives_a_consistent_log(
    tmp_path_factory: pytest.TempPathFactory,
    config: WorldConfig,
    data: st.DataObject,
    stop_after: int,
) -> None:
    """For any world and any stopping point: the log folds to the runner's state, every
    checkpoint is a fold of a prefix, and the resumed run completes."""
    path = tmp_path_factory.mktemp("db") / "pipeline.db"
    world = SimulatedWorld(config=config, chooser=HypothesisChooser(data.draw))
    with SqliteEventStore(path, synchronous="OFF") as store:
        first = run_durable(store, world, options=RunOptions(max_effects=stop_after))
        final = (
            run_durable(store, world, run_id=first.run_id)
            if not is_complete(first.state)
            else first
        )
        log = list(store.read(first.run_id))
        assert fold(log) == final.state
        assert is_complete(final.state)
        for checkpoint in store.checkpoints(first.run_id):
            assert checkpoint_state(checkpoint, "t") == fold(log[: checkpoint.sequence])


def test_a_handler_that_reports_in_steps_has_each_step_stored_before_it_goes_on() -> None:
    """A handler yielding its facts in steps (as an agent's start, then its outcome): the
    runner stores and folds each step before asking for the next, and the log is the same as
    when the handler reports everything at once."""
    store = MemoryEventStore()
    world = _world()
    heads_seen: list[tuple[int, int]] = []

    def in_steps(effect: Effect) -> Iterator[Sequence[PipelineEvent]]:
        facts = list(world(effect))
        if not isinstance(effect, InvokeAgent):
            yield facts
            return
        runs = store.runs()
        before = runs[-1].events if runs else 0
        yield facts[:1]  # the start, stored before the rest is carried out
        heads_seen.append((before, store.runs()[-1].events))
        yield facts[1:]

    stepped = run_in_memory(in_steps, store=store, options=RunOptions(clock=_frozen_clock))
    at_once = run_in_memory(_world(), options=RunOptions(clock=_frozen_clock))
    assert heads_seen, "the world invoked agents"
    assert all(after == before + 1 for before, after in heads_seen)
    assert stepped.events == at_once.events
    assert stepped.state == at_once.state


class _ProcessDiedError(Exception):
    """Stands for the process dying between two steps of a handler (kill -9)."""


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=world_configs(), data=st.data(), die_at=st.integers(1, 2))
def test_dying_while_an_agent_works_anywhere_resumes_to_a_consistent_end(
    config: WorldConfig, data: st.DataObject, die_at: int
) -> None:
    """Agents' starts are recorded as their own step; the process dies after the start of
    the ``die_at``-th invocation, before its outcome. The log keeps that start, followed by
    the resume; the resumed run completes within its budgets, its log folds to its state,
    and the attempt cut short runs again under its own number."""
    store = MemoryEventStore()
    world = SimulatedWorld(config=config, chooser=HypothesisChooser(data.draw))
    invocations = 0

    def dies_mid_agent(effect: Effect) -> Iterator[Sequence[PipelineEvent]]:
        nonlocal invocations
        facts = list(world(effect))
        if not isinstance(effect, InvokeAgent):
            yield facts
            return
        invocations += 1
        yield facts[:1]
        if invocations == die_at:
            raise _ProcessDiedError
        yield facts[1:]

    try:
        done = run_durable(store, dies_mid_agent, options=RunOptions(clock=_frozen_clock))
    except _ProcessDiedError:
        event("died mid-agent")
        (run,) = store.runs()
        done = run_durable(store, world, run_id=run.run_id, options=RunOptions(clock=_frozen_clock))
        log = list(store.read(run.run_id))
        cut = next(
            i
            for i, e in enumerate(log)
            if isinstance(e, RunResumed) and isinstance(log[i - 1], InvocationStarted)
        )
        started = log[cut - 1]
        assert isinstance(started, InvocationStarted)
        again = [
            e for e in log[cut:] if isinstance(e, InvocationStarted) and e.role is started.role
        ]
        if again and not isinstance(log[cut + 1], CheckpointSaved):
            event("the attempt ran again")
            assert again[0].attempt == started.attempt
    log = list(store.read(done.run_id))
    assert fold(log) == done.state
    assert is_complete(done.state)
    check_state(done.state)


def test_an_interruption_asked_as_the_run_ends_is_not_recorded_after_its_end() -> None:
    """A signal that arrives while the run's last facts are being stored finds nothing left
    to interrupt: the log ends with the run's end, and no anomaly is counted."""
    interruption = Interruption()

    class Stops(RunObserver):
        def event(self, _state: object, event: PipelineEvent, /) -> None:
            if isinstance(event, RunCompleted):
                interruption.request("SIGTERM")

    store = MemoryEventStore()
    options = RunOptions(clock=_frozen_clock, interruption=interruption)
    done = run_durable(store, _world(), observer=Stops(), options=options)
    log = list(store.read(done.run_id))
    assert isinstance(log[-1], RunCompleted)
    assert not any(isinstance(e, RunInterrupted) for e in log)
    assert done.state.ledger.anomalies == 0
    assert is_complete(done.state)
