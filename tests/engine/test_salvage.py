"""Salvage: the good prefix of a damaged run in a real SQLite file, copied with one
``RunSalvaged`` fact, resumes to completion in the same world."""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.core.state import Phase
from pipeline.engine import (
    NothingToSalvageError,
    RunOptions,
    RunPresentError,
    good_prefix,
    run_durable,
    salvage,
)
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.events import Instant, PipelineEvent, RunId, RunSalvaged
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import SqliteEventStore, StoreCorruptError
from pipeline.reducers import fold
from tests.support import budget

T = Instant(datetime(2026, 6, 1, tzinfo=UTC))


def _clock() -> Instant:
    return T


def _world() -> SimulatedWorld:
    loop = attrs.evolve(simulated_policy(), required_events=())
    config = WorldConfig(
        budget=budget(),
        chains=default_chains(("claude",)),
        rebase_onto=None,
        run_id="salvage-1",
        loop=loop,
    )
    return SimulatedWorld(
        config=config,
        chooser=ScriptedChooser(answers={}),
        clock=fake_clock(step=timedelta(0), start=T),
    )


def _whole_run(path: Path) -> tuple[RunId, list[PipelineEvent]]:
    with SqliteEventStore(path) as store:
        run = run_durable(store, _world(), options=RunOptions(clock=_clock))
        return run.run_id, list(store.read(run.run_id))


@settings(max_examples=15, deadline=None)
@given(data=st.data())
def test_any_lost_row_keeps_the_events_before_it_and_the_run_resumes_to_its_end(
    data: st.DataObject,
) -> None:
    """Delete any row but the first (the last one too: a lost tail, which only the head
    tells): salvage keeps exactly the events before it, then one ``RunSalvaged`` naming the
    damage; resuming the salvaged run in the same world completes it."""
    with tempfile.TemporaryDirectory() as folder:
        damaged, new = Path(folder) / "damaged.db", Path(folder) / "new.db"
        run_id, events = _whole_run(damaged)
        lost = data.draw(st.integers(1, len(events) - 1), label="lost row")
        with sqlite3.connect(damaged) as db:
            db.execute("DELETE FROM events WHERE sequence = ?", (lost,))
        db.close()
        with (
            SqliteEventStore(damaged, read_only=True) as source,
            SqliteEventStore(new) as target,
        ):
            done = salvage(
                source,
                run_id,
                target,
                source_label="damaged.db",
                clock=_clock,
                redactor=Redactor({}),
            )
            copied = list(target.read(run_id))
            assert done.kept == lost
            assert done.held == len(events)
            assert copied[:-1] == events[:lost]
            fact = copied[-1]
            assert isinstance(fact, RunSalvaged)
            assert (fact.source, fact.kept, fact.at) == ("damaged.db", lost, T)
            # A row lost from the middle is a hole; the last row lost, a head past the rows.
            assert f"event {lost} is missing" in fact.reason or (
                lost == len(events) - 1
                and f"holds {lost} events, but the run's head says {len(events)}" in fact.reason
            )
            assert done.state == fold(copied)
            resumed = run_durable(target, _world(), run_id=run_id, options=RunOptions(clock=_clock))
            assert resumed.state.phase is Phase.COMPLETE
            assert resumed.state.ledger.anomalies == 0


class _Broken:
    """A store whose read yields ``good`` events and then reports damage, and whose head
    is damaged too."""

    def __init__(self, good: list[PipelineEvent]) -> None:
        self.good = good

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        yield from self.good
        raise StoreCorruptError("database disk image is malformed")

    def head(self, run_id: RunId) -> int:
        raise StoreCorruptError("the runs table is damaged")


def test_damage_the_store_reports_part_way_keeps_what_was_read(tmp_path: Path) -> None:
    """Any store error naming damage mid-read ends the prefix there, even when the head
    cannot be read either: the rows read whole and in order are kept."""
    _run_id, events = _whole_run(tmp_path / "whole.db")
    kept, held, damage = good_prefix(_Broken(events[:5]), RunId("r"))  # type: ignore[arg-type]
    assert kept == events[:5]
    assert held == 5
    assert damage == "database disk image is malformed"


def test_nothing_is_written_for_a_run_the_target_holds_or_with_no_good_event(
    tmp_path: Path,
) -> None:
    """The target holding the run, or a run whose first event is damaged: an error, and
    the target is left as it was."""
    run_id, events = _whole_run(tmp_path / "whole.db")
    with (
        SqliteEventStore(tmp_path / "whole.db", read_only=True) as source,
        SqliteEventStore(tmp_path / "twice.db") as target,
    ):
        salvage(source, run_id, target, source_label="s", clock=_clock)
        with pytest.raises(RunPresentError, match="holds run"):
            salvage(source, run_id, target, source_label="s", clock=_clock)
        assert target.head(run_id) == len(events) + 1
        empty = _Broken([])
        with pytest.raises(NothingToSalvageError, match="nothing to salvage"):
            salvage(empty, run_id, target, source_label="s", clock=_clock)  # type: ignore[arg-type]
        assert target.head(run_id) == len(events) + 1


def test_a_lost_tail_is_damage_by_the_head(tmp_path: Path) -> None:
    """The last row deleted: the head counts one more, and salvage names the lost tail
    instead of calling the run undamaged."""
    run_id, events = _whole_run(tmp_path / "whole.db")
    with sqlite3.connect(tmp_path / "whole.db") as db:
        db.execute("DELETE FROM events WHERE sequence = ?", (len(events) - 1,))
    db.close()
    with SqliteEventStore(tmp_path / "whole.db", read_only=True) as source:
        kept, held, damage = good_prefix(source, run_id)
    assert kept == events[:-1]
    assert held == len(events)
    assert damage is not None
    assert f"holds {len(events) - 1} events, but the run's head says {len(events)}" in damage
