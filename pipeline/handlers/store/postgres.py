"""The PostgreSQL event store (the optional extra ``postgres``): one database shared by many
workers on many machines.

Same contract as the SQLite store (``tests/handlers/store/contract.py`` runs against both).
One transaction per append: the run's head is checked and moved by one conditional
``UPDATE`` (PostgreSQL re-checks its ``WHERE`` after a concurrent writer commits, so of two
appenders expecting the same head exactly one moves it), then the events and their response
rows are inserted. An append asked not to flush commits with ``synchronous_commit = off``.

Bound to a ``guard`` (an :class:`AppendGuard`: the run queue binds a worker's store to its
lease, :class:`~pipeline.handlers.store.queue.Lease`), every append also checks the guard's
condition where it moves the run's head, so a worker that lost its lease (stalled past it,
taken over) cannot write another event.

A dropped connection is reopened with backoff, within ``retry_s`` seconds; an append retried
after its connection dropped during the commit finds its own events stored and succeeds.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import orjson
import psycopg

from pipeline.core.serialization import EncodedCheckpoint, unstructure_event
from pipeline.events import WIRE_TAGS, PipelineEvent, RunId
from pipeline.handlers.store._chain import ChainCheck, chain_start
from pipeline.handlers.store._inbox_sql import legacy_inbox, post_letters, read_inbox
from pipeline.handlers.store._pg_append import (
    COPY_FROM,
    AppendGuard,
    append_in_one,
    append_under_lock,
    chained,
    holds,
)
from pipeline.handlers.store._pg_connection import PgSession, describe_url
from pipeline.handlers.store._pg_lease import advisory_lease
from pipeline.handlers.store._pg_migrations import (
    PG_MIGRATIONS,
    applied_migrations,
    apply_migrations,
)
from pipeline.handlers.store._pg_sql import READ_SQL, nul_free, write_rows
from pipeline.handlers.store._port import (
    Letter,
    Message,
    MessageKind,
    RunSummary,
    SequenceConflictError,
)
from pipeline.handlers.store._projection import (
    DEFAULT_PROJECTIONS,
    Projection,
    project,
    rebuilt,
)
from pipeline.handlers.store._rows import (
    LegacyVerdicts,
    check_sequence,
    choose_run,
    decode_row,
    refuse_newer_schema,
)

__all__ = ["AppendGuard", "PostgresEventStore", "advisory_lease", "describe_url"]

_READ_BATCH: Final = 1_000
_CHAIN_MIGRATION: Final = 6
"""The migration that added the hash chain's columns."""
_INBOX_MIGRATION: Final = 12
"""The migration that made the answers, the guidance and the context book one inbox."""


class PostgresEventStore(PgSession):
    """An :class:`~pipeline.handlers.store.EventStore` in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user@host:5432/db``). ``synchronous_commit`` False
    commits every append without waiting for the server's disk (the ``process`` durability).
    ``retry_s`` bounds how long a lost or refused connection is retried before
    :class:`StoreError` says the database is unreachable; ``connect_within_s``, when given,
    bounds the first connection instead (a command a person typed fails fast).
    ``projections`` are kept in the transaction of each append.
    """

    def __init__(
        self,
        url: str,
        *,
        guard: AppendGuard | None = None,
        synchronous_commit: bool = True,
        retry_s: float = 10.0,
        read_only: bool = False,
        connect_within_s: float | None = None,
        projections: Sequence[Projection] = DEFAULT_PROJECTIONS,
    ) -> None:
        super().__init__(
            url, synchronous_commit=synchronous_commit, retry_s=retry_s, read_only=read_only
        )
        self.guard = guard
        self._projections = tuple(projections)
        self._inbox = "inbox"
        """The inbox's table, or the older release's tables read as one (a reader's)."""
        self._digest, self._tip = "digest", "tip"
        """The columns of the hash chain, or NULL in a database an older release left."""
        self._tips: dict[RunId, tuple[int, str | None]] = {}
        """Per run this process appended to: the head and tip it left, so the usual append
        (one statement) can chain its events without reading the tip first."""
        self._connect(connect_within_s)
        if read_only:
            self._check_schema()
        else:
            self.migrate()

    # -- the schema ---------------------------------------------------------------------

    def _check_schema(self) -> None:
        """For a reader: refuse a schema from a newer release, and read an older one as it is
        (no digests before the hash chain's migration); nothing is changed."""
        versions = self.retrying(
            "read the schema version", lambda conn: applied_migrations(conn, self.label)
        )
        refuse_newer_schema(self.label, versions, {version for version, _, _ in PG_MIGRATIONS})
        if _CHAIN_MIGRATION not in versions:
            self._digest, self._tip = "NULL", "NULL"
        if _INBOX_MIGRATION not in versions:
            legacy = legacy_inbox(
                answers=5 in versions,
                guidance=8 in versions,
                notes=11 in versions,
                postgres=True,
                sent=9 in versions,
            )
            self._inbox = f"({legacy}) AS inbox"

    def migrate(self) -> list[int]:
        """Apply the migrations not yet applied; return their numbers (none the second time)."""
        return self.retrying("migrate the schema", lambda conn: apply_migrations(conn, self.label))

    # -- the log -----------------------------------------------------------------------

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` in one transaction if the log holds ``expected_sequence`` events
        (and, with a guard, it holds), with the rows the projections make of them."""
        bodies = [
            (WIRE_TAGS[type(event)], event.at, orjson.dumps(unstructure_event(event)).decode())
            for event in events
        ]
        head = expected_sequence + len(bodies)
        attempts = 0
        # Projected before the transaction: a log that moved meanwhile conflicts.
        tables = project(self._projections, run_id, expected_sequence, events, self)
        written = [(p, tables[p.table]) for p in self._projections if tables[p.table]]

        def locked(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
            """The append with the run's row locked, its head and tip read afresh."""
            return append_under_lock(
                conn,
                run_id,
                expected_sequence,
                bodies,
                written,
                guard=self.guard,
                label=self.label,
                unsynced=not flush and self.synchronous_commit,
            )

        def work(conn: psycopg.Connection[Any]) -> int:
            nonlocal attempts
            attempts += 1
            known = self._tips.get(run_id)
            try:
                if (
                    known is not None
                    and known[0] == expected_sequence > 0
                    and 0 < len(bodies) <= COPY_FROM
                ):
                    rows = chained(run_id, expected_sequence, bodies, known[1])
                    try:
                        append_in_one(
                            conn,
                            run_id,
                            expected_sequence,
                            rows,
                            written,
                            prev=known[1],
                            guard=self.guard,
                            label=self.label,
                            # Synced only when asked and the store syncs at all ("process"
                            # never does).
                            sync=flush and self.synchronous_commit,
                        )
                    except SequenceConflictError as error:
                        if error.actual != expected_sequence:
                            raise
                        # The head is where this process left it, its tip is not: read both
                        # afresh under the row's lock.
                        rows = locked(conn)
                else:
                    rows = locked(conn)
            except SequenceConflictError:
                self._tips.pop(run_id, None)
                # A retry after a commit whose answer was lost: the events may be ours.
                if attempts > 1 and holds(conn, run_id, expected_sequence, bodies):
                    return head
                raise
            if rows:
                self._tips[run_id] = (head, rows[-1][-1])
            return head

        return self.retrying(f"append to run {run_id!r}", work)

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        """The run's events from ``from_sequence`` on, fetched in batches (constant memory),
        each checked against the hash chain; each batch is read with the run's head and tip
        in one statement (one snapshot), and the last is checked against them."""
        log = f"{self.label} run {run_id}"
        chain = ChainCheck(log, run_id, self._chain_before(run_id, from_sequence, log))
        first = None if from_sequence <= 0 else lambda: self._first_event(run_id, log)
        legacy = LegacyVerdicts(first)
        position = from_sequence
        while True:
            start = position

            def batch(conn: psycopg.Connection[Any], start: int = start) -> list[Any]:
                sql = READ_SQL.format(digest=self._digest, tip=self._tip)
                return conn.execute(sql.encode(), (start, _READ_BATCH, run_id)).fetchall()

            rows = self.retrying(f"read run {run_id!r}", batch)
            events = [row for row in rows if row[0] is not None]
            for sequence, tag, version, body, digest, _, _ in events:
                check_sequence(sequence, position, log)
                position += 1
                event = decode_row(body, version, log, sequence, legacy)
                chain.feed(sequence, tag, version, body, digest)
                yield event
            if len(events) < _READ_BATCH:
                head, tip = (int(rows[0][5]), rows[0][6]) if rows else (0, None)
                chain.finish(position, head, tip)
                return

    def _first_event(self, run_id: RunId, log: str) -> PipelineEvent | None:
        """The run's first event (its start), for a read that begins later."""
        row = self.retrying(
            f"read run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT schema_version, body::text FROM events WHERE run_id = %s AND sequence = 0",
                (run_id,),
            ).fetchone(),
        )
        return None if row is None else decode_row(row[1], int(row[0]), log, 0)

    def _chain_before(self, run_id: RunId, from_sequence: int, log: str) -> str | None:
        """The digest of the event before ``from_sequence`` (None from the start, or before
        the chain began), after checking that no row before it is missing."""
        if from_sequence <= 0:
            return None
        found = self.retrying(
            f"read run {run_id!r}",
            lambda conn: conn.execute(
                f"SELECT count(*), max(CASE WHEN sequence = %s THEN {self._digest} END) "
                "FROM events WHERE run_id = %s AND sequence < %s",
                (from_sequence - 1, run_id, from_sequence),
            ).fetchone(),
        )
        assert found is not None
        count, digest = found
        return chain_start(log, from_sequence, int(count), None if digest is None else str(digest))

    def head(self, run_id: RunId) -> int:
        """How many events the run's log holds."""
        row = self.retrying(
            f"read run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT head FROM runs WHERE run_id = %s", (run_id,)
            ).fetchone(),
        )
        return 0 if row is None else int(row[0])

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first."""
        rows = self.retrying(
            "list runs",
            lambda conn: conn.execute(
                "SELECT run_id, head, started_at FROM runs ORDER BY started_at, created"
            ).fetchall(),
        )
        return [
            RunSummary(run_id=RunId(r), events=int(h), started_at=started.isoformat())
            for r, h, started in rows
        ]

    def ensure_present(self) -> None:
        """A database server's store cannot be deleted under an open connection: a no-op."""

    def choose_run(self, run_id: str | None) -> RunId:
        """``run_id`` when the store holds it, or the latest run when None;
        :class:`UnknownRunError` naming the runs it holds otherwise."""
        return choose_run(self.label, [r.run_id for r in self.runs()], run_id)

    # -- projections and checkpoints ---------------------------------------------------

    def projected(self, projection: Projection, run_id: RunId) -> list[tuple[Any, ...]]:
        """The run's rows of ``projection``'s table, in its order."""
        columns = ", ".join(projection.columns)
        sql = (
            f"SELECT {columns} FROM {projection.table} WHERE run_id = %s "
            f"ORDER BY {projection.order}"
        )
        return self.retrying(
            f"read the {projection.table} of run {run_id!r}",
            lambda conn: conn.execute(sql.encode(), (run_id,)).fetchall(),
        )

    def rebuild_projections(self) -> int:
        """Recreate every projection's table from every run's events, in one transaction."""
        projections = self._projections

        def work(conn: psycopg.Connection[Any]) -> int:
            count = 0
            with conn.transaction(), conn.cursor() as cursor:
                for projection in projections:
                    cursor.execute(f"DELETE FROM {projection.table}".encode())
                for run in self.runs():
                    tables = rebuilt(projections, run.run_id, self)
                    written = [(p, tables[p.table]) for p in projections]
                    write_rows(cursor, written)
                    count += sum(len(rows) for _, rows in written)
            return count

        return self.retrying("rebuild the projections", work)

    # -- the inbox ---------------------------------------------------------------------

    def post(self, letters: Sequence[Letter]) -> list[Message]:
        """Keep ``letters`` in one transaction, each numbered after its addressee's last of
        its kind (a key kept before gives the message kept then: a post retried after its
        reply was lost keeps a keyed letter once)."""

        def work(conn: psycopg.Connection[Any]) -> list[Message]:
            with conn.transaction():
                # Numbers in commit order: a reader never finds a gap filled in later.
                conn.execute("LOCK TABLE inbox IN EXCLUSIVE MODE")
                return post_letters(
                    lambda sql, values: conn.execute(sql.encode(), values),
                    letters,
                    datetime.now(UTC),
                    "%s",
                    text=nul_free,
                )

        return self.retrying("post to the inbox", work)

    def inbox(self, kind: MessageKind, to: RunId | None, after: int = 0) -> list[Message]:
        """The messages of ``kind`` for ``to`` numbered after ``after``, in order."""
        return self.retrying(
            f"read the inbox ({kind.value})",
            lambda conn: read_inbox(
                lambda sql, values: conn.execute(sql.encode(), values),
                self._inbox,
                kind,
                to,
                after,
                "%s",
            ),
        )

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """Store ``checkpoint`` (the run must exist), without waiting for the server's disk."""

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                conn.execute("SET LOCAL synchronous_commit = off")
                conn.execute(
                    "INSERT INTO checkpoints VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (run_id, sequence) DO UPDATE SET format_version = "
                    "excluded.format_version, checksum = excluded.checksum, body = excluded.body",
                    (
                        run_id,
                        checkpoint.sequence,
                        checkpoint.format_version,
                        checkpoint.checksum,
                        checkpoint.body,
                    ),
                )

        self.retrying(f"save a checkpoint of run {run_id!r}", work)

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The run's checkpoints, newest first."""
        rows = self.retrying(
            f"read checkpoints of run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT sequence, format_version, checksum, body FROM checkpoints "
                "WHERE run_id = %s ORDER BY sequence DESC",
                (run_id,),
            ).fetchall(),
        )
        return [
            EncodedCheckpoint(
                sequence=int(s), format_version=int(v), checksum=str(c), body=bytes(b)
            )
            for s, v, c, b in rows
        ]

    def __enter__(self) -> PostgresEventStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
