"""The PostgreSQL event store passes the contract against a real server, migrates
idempotently, survives a dropped connection, and says clearly when the server is away."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson
import psycopg
import pytest
from attrs import evolve

from pipeline.core.serialization import CONVERTER
from pipeline.events import ContextNote, NoteKind, ResponseSubmitted, RunId
from pipeline.handlers.store import (
    AnswerTakenError,
    Letter,
    MessageKind,
    ResponseLog,
    StoreError,
    answer_to,
    give_answer,
    give_guidance,
    notes_after,
)
from pipeline.handlers.store.postgres import PostgresEventStore, describe_url
from tests.handlers.store.contract import (
    RUN,
    T0,
    ChainContract,
    EventStoreContract,
    MakeTable,
    StoreFactory,
    Tamper,
    assert_read_stops_at_damaged_event_3,
    topics,
)
from tests.postgres import PostgresServer, schema_at
from tests.serialization.test_upcasting import FIXTURE_V7, RUN_V7, V7_VERDICTS
from tests.support import scripted_run


def _stores(url: str) -> Iterator[StoreFactory]:
    """A factory of stores on ``url`` (each call one more handle), closed afterwards."""
    opened: list[PostgresEventStore] = []

    def make(**options: Any) -> PostgresEventStore:
        store = PostgresEventStore(url, **options)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


class TestPostgresEventStore(EventStoreContract):
    """The shared contract against a fresh database on a real PostgreSQL server."""

    @pytest.fixture
    def make_store(self, postgres_url: str) -> Iterator[StoreFactory]:
        yield from _stores(postgres_url)

    @pytest.fixture
    def make_table(self, postgres_url: str) -> MakeTable:
        return _PostgresTamper(postgres_url).sql


class _PostgresTamper:
    """Changes a PostgreSQL store's rows with its own SQL, as a person with ``psql`` would."""

    def __init__(self, url: str) -> None:
        self.url = url

    def sql(self, *statements: str) -> None:
        with psycopg.connect(self.url) as conn:
            for statement in statements:
                conn.execute(statement.encode())

    def edit_body(self, run_id: str, sequence: int, old: str, new: str) -> None:
        with psycopg.connect(self.url) as conn:
            moved = conn.execute(
                "UPDATE events SET body = replace(body::text, %s, %s)::json "
                "WHERE run_id = %s AND sequence = %s AND body::text LIKE %s",
                (old, new, run_id, sequence, f"%{old}%"),
            ).rowcount
            assert moved == 1


class TestPostgresChain(ChainContract):
    """The hash chain against a fresh database on a real PostgreSQL server."""

    @pytest.fixture
    def make_store(self, postgres_url: str) -> Iterator[StoreFactory]:
        yield from _stores(postgres_url)

    @pytest.fixture
    def tamper(self, postgres_url: str) -> Tamper:
        return _PostgresTamper(postgres_url)


def test_migrations_are_idempotent_and_recorded(postgres_url: str) -> None:
    """Opening twice applies nothing more and keeps the data; the versions are recorded."""
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, topics(3))
        assert store.migrate() == []
    with PostgresEventStore(postgres_url) as store:
        assert store.head(RUN) == 3
    with psycopg.connect(postgres_url) as conn:
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == list(range(1, 15))


def test_a_store_from_a_newer_release_is_refused_untouched(postgres_url: str) -> None:
    """A migration number this release does not know: a clear error, nothing changed."""
    PostgresEventStore(postgres_url).close()
    with psycopg.connect(postgres_url) as conn:
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
    with pytest.raises(StoreError, match=r"migrations \[99\] from a newer release"):
        PostgresEventStore(postgres_url)


def test_a_database_from_before_the_chain_reads_as_it_is(postgres_url: str) -> None:
    """A database as the release before the hash chain left it (no digest column, no tip):
    a read-only session reads its run's events as they are, and a writer migrates it and the
    run goes on."""
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, topics(4))
    with psycopg.connect(postgres_url) as conn:
        conn.execute("ALTER TABLE events DROP COLUMN digest")
        conn.execute("ALTER TABLE runs DROP COLUMN tip")
        conn.execute("DELETE FROM schema_migrations WHERE version = 6")
    with PostgresEventStore(postgres_url, read_only=True) as reader:
        assert list(reader.read(RUN)) == topics(4)
        assert list(reader.read(RUN, 2)) == topics(2, start=2)
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 4, topics(2, start=4))
        assert list(store.read(RUN)) == topics(6)


def test_a_nul_in_a_response_is_kept_as_u_fffd_when_written_and_when_rebuilt(
    postgres_url: str,
) -> None:
    """PostgreSQL text holds no NUL: the response log keeps U+FFFD where an agent wrote one,
    in the append's rows and in a rebuild's alike, and the event log keeps the exact text."""
    events = scripted_run().events
    taken = next(i for i, e in enumerate(events) if isinstance(e, ResponseSubmitted))
    response = events[taken]
    assert isinstance(response, ResponseSubmitted)
    odd = evolve(response, raw_response=f"{response.raw_response}\x00")
    events = [*events[:taken], odd, *events[taken + 1 :]]
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, events)
        (row,) = ResponseLog.read(store, RUN)
        assert row.raw_response == f"{response.raw_response}\ufffd"
        store.rebuild_projections()
        assert ResponseLog.read(store, RUN) == [row]
        assert list(store.read(RUN))[taken] == odd


def test_a_dropped_connection_is_reopened_and_the_append_lands_once(postgres_url: str) -> None:
    """The server ends the store's session between appends: the next append reconnects and
    lands; the log holds every event once."""
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, topics(2))
        pid = store._connect().info.backend_pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert store.append(RUN, 2, topics(3, start=2)) == 5
        assert list(store.read(RUN)) == topics(5)
        assert store._connect().info.backend_pid != pid


def test_guidance_sent_again_after_a_lost_reply_is_kept_once(postgres_url: str) -> None:
    """The same send (its key) posted twice, as a retry after a lost reply posts it: one
    message, one number; another send gets the next."""
    with PostgresEventStore(postgres_url) as store:

        def send(key: str) -> int:
            letter = Letter(kind=MessageKind.GUIDANCE, to=RUN, text="use the stdlib", key=key)
            return store.post([letter])[0].number

        assert send("key-1") == 1
        assert send("key-1") == 1
        assert send("key-2") == 2
        assert [g.number for g in store.inbox(MessageKind.GUIDANCE, RUN)] == [1, 2]


def test_a_database_from_the_release_before_the_inbox_opens_and_answers_the_same(
    postgres_url: str,
) -> None:
    """A database as the previous release left it (schema 11, rows in its answers, guidance
    and context_notes tables) reads the same to a read-only session (not migrated) and after
    a writer migrates it (the rows carried into the inbox with their numbers and keys, the
    three tables dropped); guidance posted next is numbered after the old."""
    old, other = RunId("run-old"), RunId("run-other")
    note = ContextNote(
        uid="person:ab",
        kind=NoteKind.TASK_ADDED,
        subject="t-1",
        text="Write it",
        tags=(),
        by="person",
        written_at=T0,
    )
    with psycopg.connect(postgres_url) as conn:
        schema_at(conn, 11)
        conn.execute(
            "INSERT INTO answers (run_id, question_id, text) VALUES "
            "('run-old', 'q-1', 'Use PostgreSQL.'), ('run-other', 'q-1', 'elsewhere')"
        )
        conn.execute(
            "INSERT INTO guidance (run_id, number, hat, text, sent) VALUES "
            "('run-old', 1, NULL, 'first', 'k-1'), ('run-old', 2, 'developer', 'second', 'k-2')"
        )
        conn.execute(
            "INSERT INTO context_notes (number, uid, note) VALUES (1, %s, %s)",
            (note.uid, orjson.dumps(CONVERTER.unstructure(note)).decode()),
        )

    def same(store: PostgresEventStore) -> None:
        assert answer_to(store, old, "q-1") == "Use PostgreSQL."
        assert answer_to(store, other, "q-1") == "elsewhere"
        given = store.inbox(MessageKind.GUIDANCE, old)
        assert [(g.number, g.subject, g.text, g.key) for g in given] == [
            (1, None, "first", "k-1"),
            (2, "developer", "second", "k-2"),
        ]
        assert notes_after(store, 0) == [(1, note)]

    with PostgresEventStore(postgres_url, read_only=True) as reader:
        same(reader)
    with PostgresEventStore(postgres_url) as store:
        same(store)
        assert give_guidance(store, old, "third", None) == 3
        with pytest.raises(AnswerTakenError):
            give_answer(store, old, "q-1", "Use SQLite.")
    with psycopg.connect(postgres_url) as conn:
        found = conn.execute(
            "SELECT to_regclass('answers'), to_regclass('guidance'), "
            "to_regclass('context_notes'), to_regclass('inbox')"
        ).fetchone()
    assert found is not None
    assert found[:3] == (None, None, None)
    assert found[3] is not None


def test_an_unreachable_server_is_a_clear_error_after_retrying(postgres: PostgresServer) -> None:
    """Nothing listens on the port: retried with backoff for retry_s, then one error naming
    the server (never the password)."""
    url = f"postgresql://ralph:secret@127.0.0.1:{postgres.port + 1}/nowhere"
    with pytest.raises(StoreError) as raised:
        PostgresEventStore(url, retry_s=0.3)
    message = str(raised.value)
    assert "cannot reach the PostgreSQL server" in message
    assert f"postgresql://ralph@127.0.0.1:{postgres.port + 1}/nowhere" in message
    assert "secret" not in message


def test_urls_are_described_without_their_password() -> None:
    """The label of a URL keeps user, host, port and database, never the password."""
    assert describe_url("postgresql://u:pw@db.example:6543/ralph") == (
        "postgresql://u@db.example:6543/ralph"
    )


def test_a_database_that_does_not_exist_is_reported_at_once(postgres: PostgresServer) -> None:
    """A server that answers "no such database" is not retried: the error comes at once and
    names the database."""
    started = time.monotonic()
    with pytest.raises(StoreError, match='database "missing_db" does not exist'):
        PostgresEventStore(postgres.url("missing_db"), retry_s=30)
    assert time.monotonic() - started < 15  # retried, it would take the 30 s


def test_a_frozen_migrator_does_not_block_opening_an_up_to_date_store(
    postgres_url: str,
) -> None:
    """A session holding the migration lock in an open transaction (a worker frozen while it
    opened its store) blocks nobody once the schema is current: a store opens at once."""
    PostgresEventStore(postgres_url).close()
    with psycopg.connect(postgres_url) as frozen:
        frozen.execute("SELECT pg_advisory_xact_lock(%s)", (0x7261_6C70_6800,))
        started = time.monotonic()
        with PostgresEventStore(postgres_url) as store:
            assert store.append(RUN, 0, topics(2)) == 2
        assert time.monotonic() - started < 15  # blocked, it would wait for the lock
        frozen.rollback()


@pytest.mark.parametrize(
    ("store_syncs", "flush", "expected"),
    [(True, True, "on"), (True, False, "off"), (False, True, "off"), (False, False, "off")],
)
def test_an_append_waits_for_the_disk_only_when_flushed_by_a_store_that_syncs(
    postgres_url: str, store_syncs: bool, flush: bool, expected: str
) -> None:
    """The one-statement append sets synchronous_commit for its own transaction: on only for
    a flushed append of a store that syncs; a "process" store never turns it back on."""
    with PostgresEventStore(postgres_url, synchronous_commit=store_syncs) as store:
        store.append(RUN, 0, topics(1))
        conn = store._connect()
        sent: list[Any] = []
        execute = conn.execute

        def spy(query: Any, params: Any = None, **kwargs: Any) -> Any:
            sent.append(params)
            return execute(query, params, **kwargs)

        conn.execute = spy  # type: ignore[method-assign]
        assert store.append(RUN, 1, topics(1, start=1), flush=flush) == 2
    (params,) = [p for p in sent if isinstance(p, dict) and "sync" in p]
    assert params["sync"] == expected


def test_a_damaged_event_row_is_named_in_the_read_error(postgres_url: str) -> None:
    """A row edited behind the store's back fails the read with the server, run and event
    sequence in the message (no password), and the bad field's path."""
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, topics(5))
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "UPDATE events SET body = jsonb_set(body::jsonb, '{topic}', '7')::json "
                "WHERE run_id = %s AND sequence = 3",
                (RUN,),
            )
        assert_read_stops_at_damaged_event_3(store, store.label)


def test_a_schema_7_log_gets_its_response_verdicts_from_any_position(postgres_url: str) -> None:
    """The frozen v7 run in PostgreSQL rows as that release wrote them (no digests): read from
    its start and from its first response on, each old response gets the verdict its run's
    schema gives (the store fetches the run's start for the later read)."""
    rows = [orjson.loads(line) for line in FIXTURE_V7.read_bytes().splitlines()]
    with PostgresEventStore(postgres_url) as store, psycopg.connect(postgres_url) as conn:
        conn.execute(
            "INSERT INTO runs (run_id, started_at, head) VALUES (%s, %s, %s)",
            (RUN_V7, rows[0]["body"]["at"], len(rows)),
        )
        conn.cursor().executemany(
            "INSERT INTO events (run_id, sequence, type, schema_version, at, body) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (
                    RUN_V7,
                    r["sequence"],
                    r["body"]["type"],
                    r["schema_version"],
                    r["body"]["at"],
                    orjson.dumps(r["body"]).decode(),
                )
                for r in rows
            ],
        )
        conn.commit()
        events = list(store.read(RUN_V7))
        responses = [e for e in events if isinstance(e, ResponseSubmitted)]
        assert [(r.status, r.problems) for r in responses] == V7_VERDICTS
        start = events.index(responses[0])
        assert list(store.read(RUN_V7, start)) == events[start:]
