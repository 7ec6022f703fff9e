"""The SQLite event store passes the contract, migrates idempotently and refuses damage."""

from __future__ import annotations

import hashlib
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.serialization import encode_checkpoint
from pipeline.events import SCHEMA_VERSION, RunId
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import (
    AnswerTakenError,
    DamagedEventError,
    MessageKind,
    ResponseLog,
    SqliteEventStore,
    StoreCorruptError,
    StoreError,
    UnknownRunError,
    answer_to,
    file_notes,
    give_answer,
    give_guidance,
    notes_after,
)
from pipeline.reducers import fold
from tests.handlers.store.contract import (
    RUN,
    ChainContract,
    EventStoreContract,
    MakeTable,
    StoreFactory,
    Tamper,
    assert_read_stops_at_damaged_event_3,
    topics,
)


class _SqliteTamper:
    """Changes a SQLite store's rows with SQLite itself, as a person with ``sqlite3`` would."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def sql(self, *statements: str) -> None:
        db = sqlite3.connect(self.path)
        with db:
            for statement in statements:
                db.execute(statement)
        db.close()

    def edit_body(self, run_id: str, sequence: int, old: str, new: str) -> None:
        db = sqlite3.connect(self.path)
        with db:
            (body,) = db.execute(
                "SELECT body FROM events WHERE run_id = ? AND sequence = ?", (run_id, sequence)
            ).fetchone()
            edited = bytes(body).replace(old.encode(), new.encode())
            assert edited != bytes(body)
            db.execute(
                "UPDATE events SET body = ? WHERE run_id = ? AND sequence = ?",
                (edited, run_id, sequence),
            )
        db.close()


class TestSqliteChain(ChainContract):
    """The hash chain against a real SQLite file."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[StoreFactory]:
        opened: list[SqliteEventStore] = []

        def make() -> SqliteEventStore:
            store = SqliteEventStore(tmp_path / "pipeline.db")
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()

    @pytest.fixture
    def tamper(self, tmp_path: Path) -> Tamper:
        return _SqliteTamper(tmp_path / "pipeline.db")


class TestSqliteEventStore(EventStoreContract):
    """The shared contract against a real SQLite file."""

    @pytest.fixture
    def make_store(self, tmp_path: Path) -> Iterator[StoreFactory]:
        opened: list[SqliteEventStore] = []

        def make(**options: Any) -> SqliteEventStore:
            store = SqliteEventStore(WorkspaceLayout(root=tmp_path).store, **options)
            opened.append(store)
            return store

        yield make
        for store in opened:
            store.close()

    @pytest.fixture
    def make_table(self, tmp_path: Path) -> MakeTable:
        return _SqliteTamper(WorkspaceLayout(root=tmp_path).store).sql


def test_migrations_are_idempotent(tmp_path: Path) -> None:
    """Opening twice, or migrating again, applies nothing more and keeps the data."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, topics(3))
        assert store.migrate() == []
    with SqliteEventStore(path) as store:
        assert store.migrate() == []
        assert store.head(RUN) == 3
    rows = sqlite3.connect(path).execute("SELECT version FROM schema_migrations").fetchall()
    assert rows == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,)]


def test_the_response_log_table_has_the_documented_columns_and_check(tmp_path: Path) -> None:
    """agent_response_log: its columns, defaults, and a status outside the three refused."""
    path = tmp_path / "pipeline.db"
    SqliteEventStore(path).close()
    db = sqlite3.connect(path)
    columns = {
        name: (kind, notnull, default, pk)
        for _, name, kind, notnull, default, pk in db.execute(
            "PRAGMA table_info(agent_response_log)"
        )
    }
    assert columns == {
        "id": ("INTEGER", 0, None, 1),
        "run_id": ("TEXT", 1, None, 0),
        "task_id": ("TEXT", 1, None, 0),
        "turn_number": ("INTEGER", 1, None, 0),
        "raw_response": ("TEXT", 0, None, 0),
        "status": ("TEXT", 1, None, 0),
        "violations": ("TEXT", 0, None, 0),
        "correction_attempt": ("INTEGER", 0, "0", 0),
        "timestamp": ("TEXT", 1, "datetime('now')", 0),
    }
    with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
        db.execute(
            "INSERT INTO agent_response_log (run_id, task_id, turn_number, status) "
            "VALUES ('r', 't', 1, 'FINE')"
        )
    db.execute(
        "INSERT INTO agent_response_log (run_id, task_id, turn_number, status) "
        "VALUES ('r', 't', 1, 'MALFORMED')"
    )
    (stamp, attempt) = db.execute(
        "SELECT timestamp, correction_attempt FROM agent_response_log"
    ).fetchone()
    assert stamp
    assert attempt == 0


def test_processes_creating_one_store_at_once_all_succeed(tmp_path: Path) -> None:
    """Eight processes open a store that does not exist yet, at the same moment: each one
    migrates or sees the other's migration, none fails ("table runs already exists")."""
    path = tmp_path / "pipeline.db"
    opener = (
        "import sys, time\n"
        "from pipeline.handlers.store import SqliteEventStore\n"
        "time.sleep(max(0.0, float(sys.argv[2]) - time.time()))\n"
        "SqliteEventStore(sys.argv[1]).close()\n"
    )
    start = str(time.time() + 1.0)
    root = Path(__file__).resolve().parents[3]
    workers = [
        subprocess.Popen([sys.executable, "-c", opener, str(path), start], cwd=root)
        for _ in range(8)
    ]
    assert [w.wait(timeout=60) for w in workers] == [0] * 8
    rows = sqlite3.connect(path).execute("SELECT version FROM schema_migrations").fetchall()
    assert rows == [(1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,), (9,)]


def test_the_store_uses_wal_and_stores_type_version_and_time_in_columns(tmp_path: Path) -> None:
    """The columns a person or a projection queries without decoding JSON."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, topics(1))
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    row = db.execute("SELECT sequence, type, schema_version, at FROM events").fetchone()
    assert row == (0, "agent.topic_published", SCHEMA_VERSION, "2026-05-01T00:00:00+00:00")


def _synchronous(store: SqliteEventStore) -> str:
    """The ``synchronous`` setting of the store's own connection (a pragma of the
    connection, not the file), as SQLite reports it."""
    level = int(store._db.execute("PRAGMA synchronous").fetchone()[0])
    return ("OFF", "NORMAL", "FULL", "EXTRA")[level]


def test_unflushed_commits_use_normal_and_flushed_ones_the_store_setting(tmp_path: Path) -> None:
    """``flush=False`` commits with ``synchronous=NORMAL`` (not synced); the next flushed
    commit (``FULL``) syncs the WAL and every frame before it. A store opened with ``NORMAL``
    (durability "process") never syncs a commit; checkpoints are never flushed."""
    with SqliteEventStore(tmp_path / "full.db") as store:
        assert _synchronous(store) == "FULL"
        store.append(RUN, 0, topics(1), flush=False)
        assert _synchronous(store) == "NORMAL"
        store.append(RUN, 1, topics(1, start=1))
        assert _synchronous(store) == "FULL"
        store.save_checkpoint(RUN, encode_checkpoint(fold(topics(0))))
        assert _synchronous(store) == "NORMAL"
    with SqliteEventStore(tmp_path / "process.db", synchronous="NORMAL") as store:
        store.append(RUN, 0, topics(1))
        assert _synchronous(store) == "NORMAL"


def test_unflushed_appends_survive_the_killing_of_their_process(tmp_path: Path) -> None:
    """A process that appends without flushing and is then killed (SIGKILL, no cleanup)
    leaves every committed event readable: only a power cut can take them."""
    path = tmp_path / "pipeline.db"
    writer = (
        "import os, signal, sys\n"
        "from pipeline.handlers.store import SqliteEventStore\n"
        "from tests.handlers.store.contract import RUN, topics\n"
        "store = SqliteEventStore(sys.argv[1])\n"
        "for k in range(50):\n"
        "    store.append(RUN, k, topics(1, start=k), flush=False)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", writer, str(path)], cwd=root, check=False)
    assert done.returncode == -signal.SIGKILL
    with SqliteEventStore(path) as store:
        assert list(store.read(RUN)) == topics(50)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_truncated_database_is_reported_and_left_untouched(tmp_path: Path) -> None:
    """Cut the file mid-page: a clear error naming the file, and not one byte changed."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        for start in range(0, 5_000, 1_000):
            store.append(RUN, start, topics(1_000, start=start))
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])
    for leftover in (tmp_path / "pipeline.db-wal", tmp_path / "pipeline.db-shm"):
        leftover.unlink(missing_ok=True)
    before = _digest(path)
    with pytest.raises(StoreCorruptError) as raised, SqliteEventStore(path) as store:
        list(store.read(RUN))
    assert str(path) in str(raised.value)
    assert "left untouched" in str(raised.value)
    assert _digest(path) == before


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    """A stray file where the store should be is reported, not overwritten."""
    path = tmp_path / "pipeline.db"
    path.write_bytes(b"this is not sqlite" * 100)
    before = _digest(path)
    with pytest.raises(StoreCorruptError):
        SqliteEventStore(path)
    assert _digest(path) == before


def test_an_unknown_run_lists_nothing(tmp_path: Path) -> None:
    """A fresh store has no runs."""
    with SqliteEventStore(tmp_path / "pipeline.db") as store:
        assert store.runs() == []
        assert store.checkpoints(RunId("x")) == []


def test_a_store_from_a_newer_release_is_refused(tmp_path: Path) -> None:
    """A migration this release does not know: a clear error, and the store untouched."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, topics(2))
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_migrations VALUES (99, 'from the future', 'later')")
    db.commit()
    db.close()
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    before = _digest(path)
    with pytest.raises(StoreError, match=r"migrations \[99\] from a newer release"):
        SqliteEventStore(path)
    assert _digest(path) == before


def test_choose_run_gives_the_named_or_the_latest_run_and_names_the_others(tmp_path: Path) -> None:
    """One place picks a run for resume, respond and the log readers."""
    with SqliteEventStore(tmp_path / "pipeline.db") as store:
        with pytest.raises(UnknownRunError, match="holds no runs") as empty:
            store.choose_run(None)
        assert empty.value.known == ()
        store.append(RunId("a"), 0, topics(1))
        store.append(RunId("b"), 0, topics(1, start=5))
        assert store.choose_run(None) == "b"
        assert store.choose_run("a") == "a"
        with pytest.raises(UnknownRunError, match=r"no run 'c' in .*; its runs: a, b") as unknown:
            store.choose_run("c")
        assert isinstance(unknown.value, LookupError)
        assert unknown.value.known == ("a", "b")


def test_a_damaged_event_row_is_named_in_the_read_error(tmp_path: Path) -> None:
    """A row edited behind the store's back fails the read with the store, run and event
    sequence in the message, and the bad field's path; the rows before it were read."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, topics(5))
    db = sqlite3.connect(path)
    with db:
        db.execute(
            "UPDATE events SET body = json_set(body, '$.topic', 7) WHERE sequence = 3",
        )
    db.close()
    with SqliteEventStore(path) as store:
        assert_read_stops_at_damaged_event_3(store, str(path))


def test_a_store_from_before_the_chain_is_migrated_and_its_runs_go_on(tmp_path: Path) -> None:
    """A store as the release before the hash chain left it (schema 3: no digest column, no
    tip): a writer adds the columns, the old rows read as they are, and the run's next
    events start its chain, which then catches an edit."""
    path = tmp_path / "pipeline.db"
    with SqliteEventStore(path) as store:
        store.append(RUN, 0, topics(4))
    db = sqlite3.connect(path)
    with db:
        db.execute("ALTER TABLE events DROP COLUMN digest")
        db.execute("ALTER TABLE runs DROP COLUMN tip")
        db.execute("DELETE FROM schema_migrations WHERE version = 4")
    db.close()
    with SqliteEventStore(path, read_only=True) as reader:
        assert list(reader.read(RUN)) == topics(4)  # read as it is, untouched
    with SqliteEventStore(path) as store:
        assert store.migrate() == []  # applied on opening
        assert list(store.read(RUN)) == topics(4)
        store.append(RUN, 4, topics(2, start=4))
        assert list(store.read(RUN)) == topics(6)
    db = sqlite3.connect(path)
    with db:
        digests = [row[0] for row in db.execute("SELECT digest FROM events ORDER BY sequence")]
        db.execute(
            "UPDATE events SET body = replace(body, 'payload 5', 'payload 6') WHERE sequence = 5"
        )
    db.close()
    assert digests[:4] == [None] * 4
    assert all(digests[4:])
    with SqliteEventStore(path) as store, pytest.raises(DamagedEventError, match="event 5"):
        list(store.read(RUN))


OLD_STORE = Path(__file__).resolve().parents[2] / "fixtures" / "store-before-inbox.db"
"""A store the release before the one inbox wrote (schema 6: ``answers``, ``guidance`` and
``context_notes`` tables): run ``run-old`` (the scripted run), answers to its questions q-1
and q-2 and to run-other's q-1, two guidance for run-old (the second for ``developer``) and one
for run-other, two notes in the context book, and the response log's one row."""


def _inbox_as_the_old_store_holds_it(store: SqliteEventStore) -> None:
    """What the old store's answers, guidance and notes read as (whether migrated or not)."""
    old, other = RunId("run-old"), RunId("run-other")
    assert answer_to(store, old, "q-1") == "Use SQLite."
    assert answer_to(store, old, "q-2") == "No."
    assert answer_to(store, other, "q-1") == "elsewhere"
    assert answer_to(store, old, "q-3") is None
    guidance = store.inbox(MessageKind.GUIDANCE, old)
    assert [(g.number, g.subject, g.text) for g in guidance] == [
        (1, None, "Prefer the standard library."),
        (2, "developer", "Keep the tests fast"),
    ]
    assert [g.text for g in store.inbox(MessageKind.GUIDANCE, old, 1)] == ["Keep the tests fast"]
    assert [(g.number, g.subject) for g in store.inbox(MessageKind.GUIDANCE, other)] == [
        (1, "builder")
    ]
    notes = notes_after(store, 0)
    assert [(n, note.uid, note.text) for n, note in notes] == [
        (1, "run-old:3", "Keep it fast"),
        (2, "person:ab", "Write it"),
    ]
    assert len(ResponseLog.read(store, old)) == 1
    assert len(list(store.read(old))) == store.head(old) == 33


def test_a_store_from_the_release_before_the_inbox_opens_and_answers_the_same(
    tmp_path: Path,
) -> None:
    """A store file the previous release wrote reads the same to a reader (not migrated: its
    three tables read as the inbox) and after a writer migrates it (their rows carried into
    the one inbox with their numbers, the tables dropped); what is posted next is numbered
    after them, and an answered question stays answered."""
    path = tmp_path / "pipeline.db"
    shutil.copyfile(OLD_STORE, path)
    with SqliteEventStore(path, read_only=True) as reader:
        _inbox_as_the_old_store_holds_it(reader)
    assert (
        hashlib.sha256(path.read_bytes()).digest()
        == hashlib.sha256(OLD_STORE.read_bytes()).digest()
    )  # the reader changed nothing
    with SqliteEventStore(path) as store:
        _inbox_as_the_old_store_holds_it(store)
        old = RunId("run-old")
        assert give_guidance(store, old, "third", None) == 3
        with pytest.raises(AnswerTakenError):
            give_answer(store, old, "q-1", "Use PostgreSQL.")
        note = notes_after(store, 0)[0][1]
        file_notes(store, [note])  # kept once by its uid, as before
        assert [n for n, _ in notes_after(store, 0)] == [1, 2]
    tables = {
        row[0]
        for row in sqlite3.connect(path).execute(
            "SELECT name FROM sqlite_master WHERE type='table'"
        )
    }
    assert "inbox" in tables
    assert not tables & {"answers", "guidance", "context_notes"}
