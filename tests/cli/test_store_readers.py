"""Readers of a store: read-only (the file is never changed, an old schema is read as it is),
and a damaged store named as damage with the store-error exit (real ``ralph`` processes)."""

from __future__ import annotations

import shutil
import sqlite3
import string
from pathlib import Path
from random import Random

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import DamagedEventError, SqliteEventStore
from tests.runtime.workspace import ralph

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store of one demo run."""
    base = tmp_path_factory.mktemp("demo")
    assert ralph("demo", "run", cwd=base).returncode == 0
    return WorkspaceLayout(root=base / "run").store


_READERS = (("status", "--store"), ("replay",), ("events",), ("runs",))


def test_readers_leave_an_old_schema_store_untouched(demo_store: Path, tmp_path: Path) -> None:
    """A store at schema version 2 (no inbox, no hash chain): every reader works,
    and the file's bytes and mtime stay the same and no migration runs. (SQLite's read-only
    WAL reader may still create an empty -wal/-shm pair beside it.)"""
    db = tmp_path / "old.db"
    shutil.copy(demo_store, db)
    with sqlite3.connect(db) as connection:
        connection.execute("DROP TABLE inbox")
        connection.execute("ALTER TABLE events DROP COLUMN digest")
        connection.execute("ALTER TABLE runs DROP COLUMN tip")
        connection.execute("DELETE FROM schema_migrations WHERE version >= 3")
    connection.close()
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    for reader in _READERS:
        result = ralph(*reader, str(db), cwd=tmp_path)
        assert result.returncode == 0, (reader, result.stderr)
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_a_damaged_row_is_a_store_error_naming_the_store(demo_store: Path, tmp_path: Path) -> None:
    """An invalid UTF-8 byte in a run's stored text: every reader exits 4 with one message
    naming the store and the damage, never a traceback."""
    db = tmp_path / "damaged.db"
    shutil.copy(demo_store, db)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE runs SET started_at = CAST(x'ff' AS TEXT)")
    connection.close()
    for reader in _READERS:
        result = ralph(*reader, str(db), cwd=tmp_path)
        assert result.returncode == 4, (reader, result.stderr)
        assert str(db) in result.stderr
        assert "damaged" in result.stderr
        assert "Traceback" not in result.stderr


def test_a_damaged_event_names_the_last_good_position(demo_store: Path, tmp_path: Path) -> None:
    """An event body with an invalid byte: ``replay`` and ``events`` exit 4 naming the
    store, the event and the last good position."""
    db = tmp_path / "damaged.db"
    shutil.copy(demo_store, db)
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE events SET body = CAST(x'7b22ff22' AS BLOB) WHERE sequence = 5")
    connection.close()
    for reader in (("replay",), ("events",)):
        result = ralph(*reader, str(db), cwd=tmp_path)
        assert result.returncode == 4, (reader, result.stderr)
        assert "event 5" in result.stderr
        assert "last good position is 5" in result.stderr
        assert "Traceback" not in result.stderr


def _damage(demo_store: Path, tmp_path: Path, *statements: str) -> Path:
    db = tmp_path / "damaged.db"
    shutil.copy(demo_store, db)
    with sqlite3.connect(db) as connection:
        for statement in statements:
            connection.execute(statement)
    connection.close()
    return db


def test_a_missing_event_is_damage_not_a_shorter_log(demo_store: Path, tmp_path: Path) -> None:
    """A row taken out of the middle of the log: the fold would go on without it, so every
    whole read names the hole (exit 4) instead of verifying a log with a fact missing. (A
    reader that starts from a later checkpoint, as ``status`` does, never reads that row.)"""
    db = _damage(demo_store, tmp_path, "DELETE FROM events WHERE sequence = 7")
    for reader in (("replay", "--verify"), ("events",)):
        result = ralph(*reader, str(db), cwd=tmp_path)
        assert result.returncode == 4, (reader, result.stdout, result.stderr)
        assert "event 7 is missing" in result.stderr
        assert "Traceback" not in result.stderr


def test_rows_beyond_the_runs_head_are_damage(demo_store: Path, tmp_path: Path) -> None:
    """A head one short of the rows (the head moves with the rows, in one transaction)."""
    db = _damage(demo_store, tmp_path, "UPDATE runs SET head = head - 1")
    result = ralph("replay", "--verify", str(db), cwd=tmp_path)
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "the run's head says" in result.stderr


def test_verify_refuses_a_run_with_no_events(demo_store: Path, tmp_path: Path) -> None:
    """A run whose events and checkpoints are all gone is not "verified"."""
    db = _damage(
        demo_store,
        tmp_path,
        "DELETE FROM events",
        "DELETE FROM checkpoints",
        "UPDATE runs SET head = 0, tip = NULL",
    )
    result = ralph("replay", "--verify", str(db), cwd=tmp_path)
    assert result.returncode != 0, result.stdout
    assert "the run has no events" in result.stdout + result.stderr


def test_every_single_character_edit_of_an_event_is_damage(
    demo_store: Path, tmp_path: Path
) -> None:
    """Sixty edits of one character each, at random rows and offsets (a letter for another
    letter, a digit for another digit, so most still decode: a time moved to 2066, a digest,
    a path): every one fails the whole read as damage."""
    db = tmp_path / "edited.db"
    shutil.copy(demo_store, db)
    with SqliteEventStore(db, read_only=True) as store:
        run = store.choose_run(None)
    random = Random(30)
    connection = sqlite3.connect(db)
    rows = connection.execute("SELECT sequence, body FROM events").fetchall()
    for _ in range(60):
        sequence, body = random.choice(rows)
        offsets = [i for i, byte in enumerate(body) if chr(byte).isalnum()]
        offset = random.choice(offsets)
        old = chr(body[offset])
        pool = string.digits if old.isdigit() else string.ascii_letters
        new = random.choice(pool.replace(old, "")).encode()
        edited = body[:offset] + new + body[offset + 1 :]
        with connection:
            connection.execute("UPDATE events SET body = ? WHERE sequence = ?", (edited, sequence))
        with SqliteEventStore(db, read_only=True) as store:
            with pytest.raises(DamagedEventError) as raised:
                list(store.read(run))
            assert f"event {sequence}" in str(raised.value)
        with connection:
            connection.execute("UPDATE events SET body = ? WHERE sequence = ?", (body, sequence))
    connection.close()
    with SqliteEventStore(db, read_only=True) as store:
        assert len(list(store.read(run))) == len(rows)


def test_verify_names_an_edited_time_as_damage(demo_store: Path, tmp_path: Path) -> None:
    """A fact's time moved forty years on, still a valid time: ``replay --verify`` exits 4
    naming the event and the last good position (it used to say "verified")."""
    db = _damage(
        demo_store,
        tmp_path,
        'UPDATE events SET body = CAST(replace(CAST(body AS TEXT), \'"at":"2026\', '
        '\'"at":"2066\') AS BLOB) WHERE sequence = 9',
    )
    result = ralph("replay", "--verify", str(db), cwd=tmp_path)
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "damaged at event 9" in result.stderr
    assert "does not match its digest" in result.stderr
    assert "last good position is 9" in result.stderr
    assert "Traceback" not in result.stderr


def test_status_sees_a_hole_before_its_checkpoint(demo_store: Path, tmp_path: Path) -> None:
    """``status`` starts from the newest checkpoint, yet a row missing before it is named."""
    db = _damage(demo_store, tmp_path, "DELETE FROM events WHERE sequence = 2")
    result = ralph("status", "--store", str(db), cwd=tmp_path)
    assert result.returncode == 4, (result.stdout, result.stderr)
    assert "events are missing" in result.stderr
    assert "Traceback" not in result.stderr
