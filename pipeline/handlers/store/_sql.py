"""What the SQLite and PostgreSQL stores do alike (I/O): read a run's log in batches checked
against its hash chain, its head, its checkpoints, a projection's rows and the inbox; post
to the inbox, save a checkpoint and rebuild the projections; each statement written once
with the dialect's placeholder.

A store says how it runs a statement (:meth:`SqlStore._fetch`: SQLite's under its error
guard, PostgreSQL's retried on a lost connection) and how it runs a write transaction
(:meth:`SqlStore._writing`); the rest is here, with the append a write transaction makes
(:meth:`SqlStore._append_locked`). When and how a dialect opens that transaction is its own:
it is the hot path (PostgreSQL's usual append is one statement of its own instead).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, Final, Self, TypeVar

from pipeline.core.serialization import EncodedCheckpoint
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers.store._chain import ChainCheck, chain_start, chained
from pipeline.handlers.store._inbox_sql import post_letters, read_inbox
from pipeline.handlers.store._port import (
    Letter,
    Message,
    MessageKind,
    RunSummary,
    SequenceConflictError,
    UnknownRunError,
)
from pipeline.handlers.store._projection import Projection, rebuilt, upsert_sql
from pipeline.handlers.store._rows import LegacyVerdicts, check_sequence, decode_row, unapplied

__all__ = ["READ_BATCH", "SqlStore"]

T = TypeVar("T")

READ_BATCH: Final = 1_000
"""Events fetched at a time when a log is read (constant memory)."""


class SqlStore:
    """A SQL event store but its append, over its :meth:`_fetch` and :meth:`_writing`."""

    placeholder: ClassVar[str]
    """The dialect's parameter placeholder (``?`` or ``%s``)."""
    _LOCK_INBOX: ClassVar[str | None] = None
    """The statement a poster locks the inbox with, so that numbers are handed out in commit
    order (None: the write transaction holds the store's one write lock already)."""
    _BODY: ClassVar[str] = "body"
    """The body column as the store reads it (PostgreSQL's JSON is read as its text)."""
    _BEGAN: ClassVar[str]
    """The column that numbers the runs in the order their logs began."""
    _LOCK_RUN: ClassVar[str] = ""
    """What an append's read of the run's head and tip adds to lock the run's row (nothing:
    the write transaction holds the store's one write lock already)."""
    _READ: ClassVar[str]
    """A batch of a run's events, with the run's head and tip on every row: one statement, so
    one snapshot (a run with no events in the batch gives one row of NULL events). Its
    parameters: the run, the first position and the batch's size; ``{digest}`` and ``{tip}``
    stand for the hash chain's columns."""
    _MIGRATIONS: ClassVar[tuple[tuple[int, str, str], ...]]
    """The dialect's migrations (number, name, SQL)."""
    _CHAIN_MIGRATION: ClassVar[int]
    """The migration that added the hash chain's columns."""
    _INBOX_MIGRATION: ClassVar[int]
    """The migration that made the answers, the guidance and the context book one inbox."""
    label: str
    _digest = "digest"
    _tip = "tip"
    """The columns of the hash chain, or NULL in a store read as an older release left it."""
    _inbox = "inbox"
    """The inbox's table, or the older release's tables read as one (a reader's)."""
    _projections: tuple[Projection, ...]
    append: Callable[..., int]
    """The dialect's append (see :class:`~pipeline.handlers.store.EventLog`)."""

    def _fetch(self, action: str, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows ``sql`` gives (errors become the store's, saying it could not
        ``action``)."""
        raise NotImplementedError

    def _batch(self, run_id: RunId, position: int) -> tuple[list[Any], int, str | None]:
        """The run's rows ``(sequence, type, schema_version, body, digest, head, tip)`` from
        ``position`` on (at most :data:`READ_BATCH`), and its head and tip (0 and None for a
        run the store does not hold), in one snapshot."""
        sql = self._READ.format(digest=self._digest, tip=self._tip)
        rows = self._fetch(f"read run {run_id!r}", sql, (run_id, position, READ_BATCH))
        if not rows:
            return [], 0, None
        head, tip = int(rows[0][5]), rows[0][6]
        return ([] if rows[0][0] is None else rows), head, tip

    def _writing(self, action: str, work: Callable[[Any], T], *, flush: bool = True) -> T:
        """``work`` in one write transaction, given what runs its statements (``execute``
        and ``executemany``), committed synced to disk with ``flush``; errors become the
        store's, saying it could not ``action``."""
        raise NotImplementedError

    def _append_locked(
        self,
        cursor: Any,
        run_id: RunId,
        expected: int,
        bodies: Sequence[tuple[str, Any, Any]],
        tables: dict[str, list[tuple[Any, ...]]],
        started: Any,
    ) -> list[tuple[Any, ...]]:
        """Append ``bodies`` (type, time, body) after the run's ``expected`` events and write
        the projections' ``tables``, in the write transaction ``cursor`` runs; the rows
        written. The run's head and tip are read (and its row locked) first: another number
        of events is a :class:`SequenceConflictError`, and nothing is written. A run begun
        here starts at ``started``."""
        p = self.placeholder
        head = expected + len(bodies)
        found = cursor.execute(
            f"SELECT head, tip FROM runs WHERE run_id = {p}{self._LOCK_RUN}", (run_id,)
        ).fetchone()
        actual = 0 if found is None else int(found[0])
        if actual != expected:
            raise SequenceConflictError(run_id, expected, actual)
        prev = None if found is None else found[1]
        rows = chained(run_id, expected, bodies, prev)
        tip = rows[-1][-1] if rows else prev
        if found is None:
            # No row to lock yet: of two appends that begin the run, the second adds nothing.
            begun = cursor.execute(
                f"INSERT INTO runs VALUES ({p}, {p}, {p}, {p}) ON CONFLICT (run_id) DO NOTHING",
                (run_id, started, head, tip),
            )
            if not begun.rowcount:
                raise SequenceConflictError(run_id, expected, self._head_in(cursor, run_id))
        else:
            cursor.execute(
                f"UPDATE runs SET head = {p}, tip = {p} WHERE run_id = {p}", (head, tip, run_id)
            )
        self._insert_events(cursor, rows)
        self._write_projected(cursor, tables)
        return rows

    def _head_in(self, cursor: Any, run_id: RunId) -> int:
        """The run's head as the transaction ``cursor`` runs sees it."""
        row = cursor.execute(
            f"SELECT head FROM runs WHERE run_id = {self.placeholder}", (run_id,)
        ).fetchone()
        return 0 if row is None else int(row[0])

    def _insert_events(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        """Insert the events' ``rows`` in the transaction ``cursor`` runs."""
        p = self.placeholder
        cursor.executemany(f"INSERT INTO events VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})", rows)

    def _write_projected(self, cursor: Any, tables: dict[str, list[tuple[Any, ...]]]) -> None:
        """Write the projections' rows, their texts made storable, in the transaction
        ``cursor`` (from :meth:`_writing`) runs."""
        storable = self._storable
        for projection in self._projections:
            if rows := tables[projection.table]:
                cursor.executemany(
                    upsert_sql(projection, self.placeholder),
                    [tuple(storable(v) if isinstance(v, str) else v for v in row) for row in rows],
                )

    @staticmethod
    def _legacy_inbox(applied: set[int]) -> str:
        """The inbox of a store from before :attr:`_INBOX_MIGRATION` that has the migrations
        ``applied`` (:func:`~._inbox_sql.legacy_inbox`, with the dialect's numbers)."""
        raise NotImplementedError

    def _read_older(self, applied: set[int]) -> None:
        """For a reader, which never migrates: refuse a schema from a newer release, and read
        an older one as it is (no digests before the hash chain's migration, the tables
        before the inbox's read as one)."""
        unapplied(self.label, self._MIGRATIONS, applied)
        if self._CHAIN_MIGRATION not in applied:
            self._digest, self._tip = "NULL", "NULL"
        if self._INBOX_MIGRATION not in applied:
            self._inbox = f"({self._legacy_inbox(applied)}) AS inbox"

    @staticmethod
    def _storable(text: str) -> str:
        """A free text as the dialect can store it."""
        return text

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        """The run's events from ``from_sequence`` on, fetched in batches (constant memory),
        each checked against the hash chain; the last batch is checked against the run's head
        and tip read in its snapshot."""
        log = f"{self.label} run {run_id}"
        chain = ChainCheck(log, run_id, self._chain_before(run_id, from_sequence, log))
        first = None if from_sequence <= 0 else lambda: self._first_event(run_id, log)
        legacy = LegacyVerdicts(first)
        position = from_sequence
        while True:
            rows, head, tip = self._batch(run_id, position)
            for sequence, tag, version, body, digest, _head, _tip in rows:
                check_sequence(sequence, position, log)
                position += 1
                event = decode_row(body, version, log, sequence, legacy)
                # After decoding: a row that does not decode is named by what is wrong in it.
                chain.feed(sequence, tag, version, body, digest)
                yield event
            if len(rows) < READ_BATCH:
                chain.finish(position, head, tip)
                return

    def _first_event(self, run_id: RunId, log: str) -> PipelineEvent | None:
        """The run's first event (its start), for a read that begins later."""
        p = self.placeholder
        rows = self._fetch(
            f"read run {run_id!r}",
            f"SELECT schema_version, {self._BODY} FROM events WHERE run_id = {p} AND sequence = 0",
            (run_id,),
        )
        return decode_row(rows[0][1], int(rows[0][0]), log, 0) if rows else None

    def _chain_before(self, run_id: RunId, from_sequence: int, log: str) -> str | None:
        """The digest of the event before ``from_sequence`` (None from the start, or before
        the chain began); a reader that starts there also checks that no row before it is
        missing, since it never reads them."""
        if from_sequence <= 0:
            return None
        p = self.placeholder
        ((count, digest),) = self._fetch(
            f"read run {run_id!r}",
            f"SELECT count(*), max(CASE WHEN sequence = {p} THEN {self._digest} END) "
            f"FROM events WHERE run_id = {p} AND sequence < {p}",
            (from_sequence - 1, run_id, from_sequence),
        )
        return chain_start(log, from_sequence, int(count), None if digest is None else str(digest))

    def head(self, run_id: RunId) -> int:
        """How many events the run's log holds."""
        rows = self._fetch(
            f"read run {run_id!r}",
            f"SELECT head FROM runs WHERE run_id = {self.placeholder}",
            (run_id,),
        )
        return int(rows[0][0]) if rows else 0

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first (runs that started at once in the order their logs began,
        which :attr:`_BEGAN` numbers: a fork keeps its source's start)."""
        rows = self._fetch(
            "list runs",
            f"SELECT run_id, head, started_at FROM runs ORDER BY started_at, {self._BEGAN}",
            (),
        )
        return [
            RunSummary(
                run_id=RunId(run_id),
                events=int(head),
                started_at=started if isinstance(started, str) else started.isoformat(),
            )
            for run_id, head, started in rows
        ]

    def choose_run(self, run_id: str | None) -> RunId:
        """``run_id`` when the store holds it, or the latest run when None;
        :class:`UnknownRunError` naming the runs it holds otherwise."""
        runs = tuple(run.run_id for run in self.runs())
        if not runs:
            raise UnknownRunError(f"the store {self.label} holds no runs", runs)
        if run_id is None:
            return runs[-1]
        if run_id not in runs:
            raise UnknownRunError(
                f"no run {run_id!r} in {self.label}; its runs: {', '.join(runs)}", runs
            )
        return RunId(run_id)

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The run's checkpoints, newest first."""
        rows = self._fetch(
            f"read checkpoints of run {run_id!r}",
            "SELECT sequence, format_version, checksum, body FROM checkpoints "
            f"WHERE run_id = {self.placeholder} ORDER BY sequence DESC",
            (run_id,),
        )
        return [
            EncodedCheckpoint(
                sequence=int(s), format_version=int(v), checksum=str(c), body=bytes(b)
            )
            for s, v, c, b in rows
        ]

    def projected(self, projection: Projection, run_id: RunId) -> list[tuple[Any, ...]]:
        """The run's rows of ``projection``'s table, in its order."""
        return self._fetch(
            f"read the {projection.table} of run {run_id!r}",
            f"SELECT {', '.join(projection.columns)} FROM {projection.table} "
            f"WHERE run_id = {self.placeholder} ORDER BY {projection.order}",
            (run_id,),
        )

    def inbox(self, kind: MessageKind, to: RunId | None, after: int = 0) -> list[Message]:
        """The messages of ``kind`` for ``to`` numbered after ``after``, in order."""
        fetch = functools.partial(self._fetch, f"read the inbox ({kind.value})")
        return read_inbox(fetch, self._inbox, kind, to, after, self.placeholder)

    def post(self, letters: Sequence[Letter]) -> list[Message]:
        """Keep ``letters`` in one transaction, each numbered after its addressee's last of
        its kind (a key kept before gives the message kept then: a post retried after its
        reply was lost keeps a keyed letter once)."""

        def work(cursor: Any) -> list[Message]:
            if self._LOCK_INBOX is not None:
                cursor.execute(self._LOCK_INBOX)
            now = datetime.now(UTC)
            return post_letters(cursor.execute, letters, now, self.placeholder, text=self._storable)

        return self._writing("post to the inbox", work)

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """Store ``checkpoint`` (the run must exist), unflushed: a cache of the fold."""
        p = self.placeholder
        values = (
            run_id,
            checkpoint.sequence,
            checkpoint.format_version,
            checkpoint.checksum,
            checkpoint.body,
        )

        def work(cursor: Any) -> None:
            cursor.execute(
                f"INSERT INTO checkpoints VALUES ({p}, {p}, {p}, {p}, {p}) "
                "ON CONFLICT (run_id, sequence) DO UPDATE SET format_version = "
                "excluded.format_version, checksum = excluded.checksum, body = excluded.body",
                values,
            )

        self._writing(f"save a checkpoint of run {run_id!r}", work, flush=False)

    def rebuild_projections(self) -> int:
        """Recreate every projection's table from every run's events, in one transaction
        (no append lands between the read and the write)."""

        def work(cursor: Any) -> int:
            count = 0
            for projection in self._projections:
                cursor.execute(f"DELETE FROM {projection.table}")
            for run in self.runs():
                tables = rebuilt(self._projections, run.run_id, self)
                self._write_projected(cursor, tables)
                count += sum(len(rows) for rows in tables.values())
            return count

        return self._writing("rebuild the projections", work)

    def ensure_present(self) -> None:
        """Raise :class:`~pipeline.handlers.store.StoreVanishedError` when the store was
        removed while open (a database server's cannot be: a no-op)."""

    def close(self) -> None:
        """Release the store's connection."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
