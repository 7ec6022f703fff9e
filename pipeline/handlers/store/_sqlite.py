"""The SQLite event store: the embedded default, at ``.git/ralph/pipeline.db`` in the workspace.

WAL mode, ``synchronous=FULL`` and one ``BEGIN IMMEDIATE`` transaction per append, so a
handler's facts are on disk before the next effect starts. An append asked not to flush is
committed with ``synchronous=NORMAL`` (written to the WAL, not synced); the next ``FULL``
commit syncs the WAL and with it every frame before it. Events are stored as the JSON the
cattrs converter writes, with their type, schema version and time in their own columns.
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson

from pipeline.core.serialization import unstructure_event
from pipeline.events import WIRE_TAGS, PipelineEvent, RunId
from pipeline.handlers.store._inbox_sql import legacy_inbox
from pipeline.handlers.store._migrations import MIGRATIONS, apply_migrations
from pipeline.handlers.store._port import StoreError, StoreVanishedError
from pipeline.handlers.store._projection import DEFAULT_PROJECTIONS, Projection, project
from pipeline.handlers.store._sql import SqlStore
from pipeline.handlers.store._sqlite_open import guard, open_read_only, open_to_write
from pipeline.handlers.store._summaries import RUN_STATUS, RUN_SUMMARIES

__all__ = ["DEFAULT_STORE_PATH", "SqliteEventStore"]

DEFAULT_STORE_PATH: Final = Path(".ralph") / "pipeline.db"
"""Where a workspace keeps its store, relative to the workspace root."""

T = TypeVar("T")


class SqliteEventStore(SqlStore):
    """An :class:`~pipeline.handlers.store.EventStore` in one SQLite file, keeping
    ``projections`` in the transaction of each append (by default the response log and the
    runs' summaries and status, which ``ralph runs`` and ``ralph status`` read without
    decoding an event)."""

    placeholder = "?"
    _BEGAN = "rowid"
    # A plain join: from a subquery with a LIMIT, SQLite would copy the events into a table.
    _READ = """
        SELECT e.sequence, e.type, e.schema_version, e.body, {digest}, r.head, r.tip
        FROM (SELECT run_id, head, {tip} AS tip FROM runs WHERE run_id = ?) AS r
        LEFT JOIN events AS e ON e.run_id = r.run_id AND e.sequence >= ?
        ORDER BY e.sequence LIMIT ?
    """
    _MIGRATIONS = MIGRATIONS
    _CHAIN_MIGRATION = 4
    _INBOX_MIGRATION = 7

    def __init__(
        self,
        path: Path | str,
        *,
        synchronous: str = "FULL",
        read_only: bool = False,
        projections: Sequence[Projection] = (*DEFAULT_PROJECTIONS, RUN_SUMMARIES, RUN_STATUS),
    ) -> None:
        self.path = Path(path)
        self.label = str(self.path)
        """The file's path, for messages."""
        self._projections = tuple(projections)
        if synchronous not in {"FULL", "NORMAL", "OFF", "EXTRA"}:
            raise ValueError(f"synchronous must be FULL, NORMAL, EXTRA or OFF, not {synchronous!r}")
        self.synchronous = synchronous
        """The setting of flushed commits; unflushed ones use ``NORMAL`` (or this, if weaker)."""
        self.read_only = read_only
        """Opened to read only: never migrated, its journal mode never changed, no write."""
        self._unflushed = "NORMAL" if synchronous in {"FULL", "EXTRA"} else synchronous
        self._current = synchronous
        self._fd = -1
        self._copy: tempfile.TemporaryDirectory[str] | None = None
        """A private copy of a store read where nobody can write (see _open_read_only)."""
        if read_only:
            self._open_read_only()
            return
        with guard(self.path, "open"):
            self._db, self._fd = open_to_write(self.path, synchronous)
            self.migrate()

    def _open_read_only(self) -> None:
        """Open for reading, never changing the file (see :func:`open_read_only`): a schema
        from a newer release is refused, an older one read as it is."""
        with guard(self.path, "open"):
            self._db, self._copy, applied = open_read_only(self.path)
        self._read_older(applied)

    @staticmethod
    def _legacy_inbox(applied: set[int]) -> str:
        """The answers (3), guidance (5) and context book (6) as one inbox."""
        return legacy_inbox(
            answers=3 in applied, guidance=5 in applied, notes=6 in applied, postgres=False
        )

    def ensure_present(self) -> None:
        """Raise :class:`StoreVanishedError` when the file this store writes is no longer the
        one at its path (deleted, or replaced by another): SQLite would go on writing into
        the unlinked file and every fact since would be lost unseen. Two ``stat`` calls."""
        if self._fd < 0:
            return
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            named = None
        except OSError as error:
            raise StoreError(f"{self.path}: cannot check the event store: {error}") from error
        held = os.fstat(self._fd)
        if (
            named is None
            or held.st_nlink == 0
            or (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino)
        ):
            what = "removed" if named is None else "replaced by another file"
            raise StoreVanishedError(
                f"{self.path}: the event store was {what} while the run was writing to it; "
                "nothing more was written, and the run's facts since it was opened are lost "
                "with the removed file. Keep the store out of the agent's reach (the default "
                "is inside the git directory)."
            )

    def migrate(self) -> list[int]:
        """Apply the migrations not yet applied; return their numbers (none the second time)."""
        return apply_migrations(self._db, self.label)

    def _sync(self, flush: bool) -> None:
        """Set the connection's ``synchronous`` for the next commit (only when it changes:
        the pragma costs a statement)."""
        wanted = self.synchronous if flush else self._unflushed
        if wanted != self._current:
            self._db.execute(f"PRAGMA synchronous={wanted}")
            self._current = wanted

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` in one transaction if the log holds ``expected_sequence`` events,
        with the rows the projections make of them; synced to disk with ``flush``."""
        bodies = [
            (WIRE_TAGS[type(event)], event.at.isoformat(), orjson.dumps(unstructure_event(event)))
            for event in events
        ]
        self.ensure_present()
        # Projected before the write lock is taken: a log that moved meanwhile conflicts.
        tables = project(self._projections, run_id, expected_sequence, events, self)
        started = bodies[0][1] if bodies else datetime.now(UTC).isoformat()

        def work(db: sqlite3.Connection) -> list[tuple[Any, ...]]:
            # Under the write lock, the run's head and tip cannot move until COMMIT.
            return self._append_locked(db, run_id, expected_sequence, bodies, tables, started)

        self._writing(f"append to run {run_id!r}", work, flush=flush)
        return expected_sequence + len(bodies)

    def _writing(self, action: str, work: Callable[[Any], T], *, flush: bool = True) -> T:
        """``work`` given the connection in one ``BEGIN IMMEDIATE`` transaction."""
        db = self._db
        with guard(self.path, action):
            self._sync(flush)
            db.execute("BEGIN IMMEDIATE")
            with db:  # committed, or rolled back on any error
                return work(db)

    def _fetch(self, action: str, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows ``sql`` gives, SQLite's errors turned into the store's."""
        with guard(self.path, action):
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        """Close the connection (and the descriptor kept to check the file)."""
        self._db.close()
        if self._copy is not None:
            self._copy.cleanup()
            self._copy = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
