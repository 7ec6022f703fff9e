"""Logs written by an older schema still replay: upcasters on read, stored data untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from pipeline.errors import WireFormatError
from pipeline.events import SCHEMA_VERSION, PlanProduced, RunId
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold
from pipeline.serialization import UPCASTERS, decode_stored_event, upcast
from pipeline.state import Phase, TerminationReason

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "schema-v1-run.jsonl"
RUN = RunId("20260301-120000-v1demo")


def _old_store(path: Path) -> None:
    """A store as a schema-1 release left it: the rows of the frozen v1 log."""
    SqliteEventStore(path).close()  # the table layout has not changed since
    rows = [orjson.loads(line) for line in FIXTURE.read_bytes().splitlines()]
    db = sqlite3.connect(path)
    first_at = rows[0]["body"]["at"]
    db.execute("INSERT INTO runs VALUES (?, ?, ?)", (RUN, first_at, len(rows)))
    db.executemany(
        "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                RUN,
                r["sequence"],
                r["body"]["type"],
                r["schema_version"],
                r["body"]["at"],
                orjson.dumps(r["body"]),
            )
            for r in rows
        ],
    )
    db.commit()
    db.close()


def test_a_frozen_schema_1_log_replays_to_the_expected_state(tmp_path: Path) -> None:
    """The checked-in v1 log (PlanProduced without ``iteration``) folds to the demo's end."""
    path = tmp_path / "pipeline.db"
    _old_store(path)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN))
    plans = [e for e in events if isinstance(e, PlanProduced)]
    assert [p.iteration for p in plans] == [1]
    state = fold(events)
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.COMPLETED
    assert state.ledger.commits == 3
    assert state.ledger.anomalies == 0
    assert state.ledger.plan_digest == (
        "d6bbffa6d63f906b2f10517806524298eee666867a3e9a2284a3ba7b817fa7da"
    )


def test_reading_upcasts_without_rewriting_the_stored_rows(tmp_path: Path) -> None:
    """The old rows keep their version and bytes after being read."""
    path = tmp_path / "pipeline.db"
    _old_store(path)
    before = sqlite3.connect(path).execute("SELECT schema_version, body FROM events").fetchall()
    with SqliteEventStore(path) as store:
        list(store.read(RUN))
    after = sqlite3.connect(path).execute("SELECT schema_version, body FROM events").fetchall()
    assert before == after
    assert {version for version, _ in after} == {1}


def test_the_current_schema_has_the_upcaster_of_its_change() -> None:
    """Version 2 changed PlanProduced; its upcaster from version 1 is registered."""
    assert SCHEMA_VERSION == 2
    assert ("planning.plan_produced", 1) in UPCASTERS


def test_an_event_from_a_newer_release_is_refused_clearly() -> None:
    """A version above ours names both versions instead of guessing."""
    with pytest.raises(WireFormatError, match="schema version 3, by a newer release"):
        upcast({"type": "misc.context_cleaned", "at": "2026-01-01T00:00:00+00:00"}, 3)


def test_events_unchanged_since_version_1_pass_through() -> None:
    """Only events with a registered upcaster are changed."""
    data = {"type": "misc.context_cleaned", "at": "2026-01-01T00:00:00+00:00"}
    assert upcast(dict(data), 1) == data
    event = decode_stored_event(orjson.dumps(data), 1)
    assert type(event).__name__ == "ContextCleaned"
