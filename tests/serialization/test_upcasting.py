"""Logs written by an older schema still replay: upcasters on read, stored data untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from pipeline import WireFormatError
from pipeline.core.serialization import UPCASTERS, decode_stored_event, upcast
from pipeline.core.state import Phase, TerminationReason
from pipeline.events import (
    RETIRED_TAGS,
    SCHEMA_VERSION,
    WIRE_TAGS,
    Json,
    LoopPolicy,
    PlanProduced,
    ResponseStatus,
    ResponseSubmitted,
    RunCompleted,
    RunId,
    RunStarted,
    TopicPublished,
)
from pipeline.handlers.store import DamagedEventError, ResponseLog, SqliteEventStore
from pipeline.reducers import fold
from pipeline.reducers.views import LoggedStatus, response_log

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIXTURE = FIXTURES / "schema-v1-run.jsonl"
RUN = RunId("20260301-120000-v1demo")
FIXTURE_V2 = FIXTURES / "schema-v2-run.jsonl"
FIXTURE_V3 = FIXTURES / "schema-v3-run.jsonl"
RUN_V3 = RunId("20261120-090000-v3demo")
FIXTURE_V7 = FIXTURES / "schema-v7-run.jsonl"
RUN_V7 = RunId("20261126-075339-ceb850")
"""A run recorded by the schema-7 release whose developer answered with structured responses
(invalid JSON, a schema violation, valid), which that release's reducer judged."""
FIXTURE_V4 = FIXTURES / "schema-v4-run.jsonl"
RUN_V4 = RunId("20261123-193846-716483")
"""The demo recorded by the schema-4 release (before usage facts and spend limits)."""
"""A simulated run recorded by the schema-2 release (topics as strings, before the reader)."""
RUN_V2 = RunId("20261101-090000-v2demo")


def _old_store(path: Path, fixture: Path = FIXTURE, run: RunId = RUN) -> None:
    """A store as an older release left it: the rows of a frozen log."""
    SqliteEventStore(path).close()  # the table layout has not changed since
    rows = [orjson.loads(line) for line in fixture.read_bytes().splitlines()]
    db = sqlite3.connect(path)
    first_at = rows[0]["body"]["at"]
    # Rows from before the hash chain: no digests, no tip.
    db.execute(
        "INSERT INTO runs (run_id, started_at, head) VALUES (?, ?, ?)", (run, first_at, len(rows))
    )
    db.executemany(
        "INSERT INTO events (run_id, sequence, type, schema_version, at, body) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            (
                run,
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


def test_a_frozen_schema_2_log_replays_with_its_topics(tmp_path: Path) -> None:
    """The checked-in v2 log: string payloads become JSON strings, no emission time, and
    completion without a recorded reason; the fold reaches the same end as it did then."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V2, RUN_V2)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V2))
    topics = [e for e in events if isinstance(e, TopicPublished)]
    assert len(topics) == 7
    assert all(isinstance(t.payload.value, str) and t.emitted_at is None for t in topics)
    assert topics[0].payload == Json.of("step 1 of attempt 4")
    completed = [e for e in events if isinstance(e, RunCompleted)]
    assert [c.reason for c in completed] == [None]
    state = fold(events)
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.MAX_ITERATIONS
    assert state.intake.topics_published == 7
    assert state.ledger.commits == 2
    assert state.ledger.anomalies == 0


def test_the_current_schema_has_the_upcasters_of_its_changes() -> None:
    """Version 2 changed PlanProduced, version 3 TopicPublished and RunCompleted, version 4
    RunStarted; versions 5, 6 and 7 only added (facts, termination reasons, and budget fields
    whose absence means no limit), so they need no upcaster; version 8's ResponseSubmitted
    verdict is upcast with its run's schema (tests below); version 9 only added (a topology
    in the loop policy, whose absence means the built-in pipeline, and a fact); version 10
    only added too (gates in the loop policy, whose absence means none, and two facts), and
    so did version 11 (the screen's policies, whose absence means no screen, and two facts)
    and version 12 (the sandbox's two facts), and version 13 (provider limits: two facts and
    the loop policy's limits, whose absence means the defaults), and version 14 (the hats'
    escalation ladders, whose absence means none), version 15 (a person's guidance: one
    fact), version 16 (a fork's fact) and version 17 (a fork's agent, model and prompt
    digest, whose absence means the source's), version 18 (the merge queue's eight facts),
    version 19 (the context book's fact, and the loop policy's context, whose absence means
    the defaults) and version 20 (four screen hit kinds; pinned gates: the loop policy's pin,
    whose absence means off, and the gate fact's pinned commit and restored files, whose
    absence means not pinned; the loop policy's review_completion, whose absence means a
    claim goes straight to validation, as it did), and version 21 (the loop policy's
    file_only_turns, whose absence means a file-only turn's topics are acted on, as they
    were)."""
    assert SCHEMA_VERSION == 21
    assert ("planning.plan_produced", 1) in UPCASTERS
    assert ("agent.topic_published", 2) in UPCASTERS
    assert ("lifecycle.run_completed", 2) in UPCASTERS
    assert ("lifecycle.run_started", 3) in UPCASTERS


def test_an_event_from_a_newer_release_is_refused_clearly() -> None:
    """A version above ours names both versions instead of guessing."""
    newer = SCHEMA_VERSION + 1
    with pytest.raises(WireFormatError, match=f"schema version {newer}, by a newer release"):
        upcast({"type": "misc.finalizing_started", "at": "2026-01-01T00:00:00+00:00"}, newer)


def test_events_unchanged_since_version_1_pass_through() -> None:
    """Only events with a registered upcaster are changed."""
    data = {"type": "misc.finalizing_started", "at": "2026-01-01T00:00:00+00:00"}
    assert upcast(dict(data), 1) == data
    event = decode_stored_event(orjson.dumps(data), 1)
    assert type(event).__name__ == "FinalizingStarted"


@pytest.mark.parametrize("tag", sorted(RETIRED_TAGS))
def test_a_retired_event_is_refused_by_name(tag: str) -> None:
    """A row with a retired tag (an event no release emitted) is refused, saying so."""
    data = {"type": tag, "at": "2026-01-01T00:00:00+00:00"}
    with pytest.raises(WireFormatError, match=f"retired type tag '{tag}'"):
        decode_stored_event(orjson.dumps(data), 7)
    assert tag not in set(WIRE_TAGS.values())


V7_VERDICTS = [
    (
        ResponseStatus.INVALID_JSON,
        (
            "not one JSON value (invalid JSON: unexpected character, expected a string key: "
            "line 1 column 3 (char 2))",
        ),
    ),
    (ResponseStatus.SCHEMA_VIOLATION, ("/: 'parameters' is a required property",)),
    (ResponseStatus.VALID, ()),
]
"""What the schema-7 release's reducer judged the three answers of the v7 fixture."""


def test_a_frozen_schema_7_log_gets_its_response_verdicts_on_read(tmp_path: Path) -> None:
    """The checked-in v7 run (written when the reducer judged responses: invalid JSON, a schema
    violation, then a valid answer) reads with each verdict the v7 release folded, and folds
    and projects its response log as it did then."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V7, RUN_V7)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V7))
        store.rebuild_projections()
        stored = ResponseLog.read(store, RUN_V7)
    responses = [e for e in events if isinstance(e, ResponseSubmitted)]
    assert [(r.status, r.problems) for r in responses] == V7_VERDICTS
    state = fold(events)
    assert state.phase is Phase.COMPLETE
    assert state.ledger.anomalies == 0
    assert state.ledger.last_error == (
        "developer response schema_violation: /: 'parameters' is a required property"
    )
    logged = [(r.status, r.violations, r.turn_number) for r in response_log(events)]
    assert logged == [
        (LoggedStatus.MALFORMED, V7_VERDICTS[0][1], 1),
        (LoggedStatus.SCHEMA_VIOLATION, V7_VERDICTS[1][1], 2),
        (LoggedStatus.SUCCESS, (), 3),
    ]
    assert stored == list(response_log(events))


def test_a_read_from_mid_log_judges_old_responses_with_the_runs_schema(tmp_path: Path) -> None:
    """A read that starts after the run's start (as resume does from a checkpoint) still
    finds the run's schema, so the verdicts are the same as from the start."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V7, RUN_V7)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V7))
        start = next(i for i, e in enumerate(events) if isinstance(e, ResponseSubmitted))
        later = list(store.read(RUN_V7, start))
    assert later == events[start:]


def test_an_old_response_without_its_run_is_refused_clearly() -> None:
    """Decoding a pre-8 response on its own cannot judge it: the error says why."""
    data = {
        "type": "agent.response_submitted",
        "role": "developer",
        "raw_response": "{}",
        "at": "2026-01-01T00:00:00+00:00",
    }
    with pytest.raises(WireFormatError, match="read only through its run's log"):
        decode_stored_event(orjson.dumps(data), 7)


def test_a_frozen_schema_3_log_replays_with_loop_control_off(tmp_path: Path) -> None:
    """The checked-in v3 log (recorded by the release before loop control) has developers
    publishing LOOP_COMPLETE; v3 runs start with every control off, so those topics change
    nothing and the fold ends exactly as the v3 release folded it."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V3, RUN_V3)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V3))
    started = events[0]
    assert isinstance(started, RunStarted)
    assert started.loop == LoopPolicy.off()
    claims = [e for e in events if isinstance(e, TopicPublished) and e.topic == "LOOP_COMPLETE"]
    assert len(claims) == 3
    state = fold(events)
    # As the v3 release printed it: complete, max_iterations, 17 topics, 2 commits, 3 iterations.
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.MAX_ITERATIONS
    assert state.intake.topics_published == 17
    assert state.ledger.commits == 2
    assert state.progress.iteration == 3
    assert state.ledger.anomalies == 0
    assert not state.intake.completion_claimed


def test_a_frozen_schema_4_log_replays_with_no_spend_limit(tmp_path: Path) -> None:
    """The checked-in v4 demo (recorded before usage facts) reads with every spend limit
    absent, and folds to the end the v4 release printed: completed, 85 events, no spend."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V4, RUN_V4)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V4))
    started = events[0]
    assert isinstance(started, RunStarted)
    assert not started.budget.limits_spend
    assert started.budget.max_cost_usd is None
    assert started.budget.role_max_cost_usd == ()
    state = fold(events)
    assert len(events) == 85
    assert state.phase is Phase.COMPLETE
    assert state.termination is TerminationReason.COMPLETED
    assert state.ledger.anomalies == 0
    assert state.ledger.spend.total.invocations == 0


def test_an_old_response_whose_runs_start_is_damaged_is_not_judged(tmp_path: Path) -> None:
    """Read from later on, an old response needs the run's first event for its schema; when
    that row is damaged, the read says so, naming it, instead of judging without a schema."""
    path = tmp_path / "pipeline.db"
    _old_store(path, FIXTURE_V7, RUN_V7)
    with SqliteEventStore(path) as store:
        events = list(store.read(RUN_V7))
    start = next(i for i, e in enumerate(events) if isinstance(e, ResponseSubmitted))
    db = sqlite3.connect(path)
    db.execute(
        "UPDATE events SET body = ? WHERE run_id = ? AND sequence = 0",
        (b'{"type": "lifecycle.run_started", "garbage": 1}', RUN_V7),
    )
    db.commit()
    db.close()
    with SqliteEventStore(path) as store, pytest.raises(DamagedEventError, match="event 0"):
        list(store.read(RUN_V7, start))
