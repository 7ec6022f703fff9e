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

from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

import orjson
import psycopg

from pipeline.core.serialization import unstructure_event
from pipeline.events import WIRE_TAGS, PipelineEvent, RunId
from pipeline.handlers.store._chain import chained
from pipeline.handlers.store._inbox_sql import legacy_inbox
from pipeline.handlers.store._pg_append import (
    COPY_FROM,
    AppendGuard,
    append_in_one,
    holds,
    nul_free,
)
from pipeline.handlers.store._pg_connection import PgSession, describe_url
from pipeline.handlers.store._pg_lease import advisory_lease
from pipeline.handlers.store._pg_migrations import (
    PG_MIGRATIONS,
    applied_migrations,
    apply_migrations,
)
from pipeline.handlers.store._port import SequenceConflictError
from pipeline.handlers.store._projection import DEFAULT_PROJECTIONS, Projection, project
from pipeline.handlers.store._sql import SqlStore

__all__ = ["AppendGuard", "PostgresEventStore", "advisory_lease", "describe_url"]

T = TypeVar("T")


class PostgresEventStore(PgSession, SqlStore):
    """An :class:`~pipeline.handlers.store.EventStore` in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user@host:5432/db``). ``synchronous_commit`` False
    commits every append without waiting for the server's disk (the ``process`` durability).
    ``retry_s`` bounds how long a lost or refused connection is retried before
    :class:`StoreError` says the database is unreachable; ``connect_within_s``, when given,
    bounds the first connection instead (a command a person typed fails fast).
    ``projections`` are kept in the transaction of each append.
    """

    placeholder = "%s"
    _BODY = "body::text"
    _BEGAN = "created"
    _LOCK_RUN = " FOR UPDATE"
    _READ = """
        SELECT e.sequence, e.type, e.schema_version, e.body::text, e.digest, r.head, r.tip
        FROM (SELECT run_id, head, {tip} AS tip FROM runs WHERE run_id = %s) AS r
        LEFT JOIN LATERAL (
            SELECT sequence, type, schema_version, body, {digest} AS digest FROM events
            WHERE events.run_id = r.run_id AND sequence >= %s ORDER BY sequence LIMIT %s
        ) AS e ON true
    """
    _MIGRATIONS = PG_MIGRATIONS
    _CHAIN_MIGRATION = 6
    _INBOX_MIGRATION = 12
    # Numbers in commit order: a reader never finds a gap filled in later.
    _LOCK_INBOX: ClassVar[str | None] = "LOCK TABLE inbox IN EXCLUSIVE MODE"
    _storable = staticmethod(nul_free)

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
        """For a reader: refuse a schema from a newer release, and read an older one as it is;
        nothing is changed."""
        versions = self.retrying(
            "read the schema version", lambda conn: applied_migrations(conn, self.label)
        )
        self._read_older(versions)

    @staticmethod
    def _legacy_inbox(applied: set[int]) -> str:
        """The answers (5), guidance (8, its keys from 9) and context book (11) as one inbox."""
        return legacy_inbox(
            answers=5 in applied,
            guidance=8 in applied,
            notes=11 in applied,
            postgres=True,
            sent=9 in applied,
        )

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
            """The append in a transaction of its own, the run's row locked while its head and
            tip are read afresh."""
            with conn.transaction(), conn.cursor() as cursor:
                if not flush and self.synchronous_commit:
                    # Not waiting for the server's disk, where the session waits.
                    cursor.execute("SET LOCAL synchronous_commit = off")
                if self.guard is not None:
                    self.guard.check(conn, self.label, run_id, starting=expected_sequence == 0)
                # A run begun with no event starts at the server's time, as every other.
                now = None if bodies else cursor.execute("SELECT now()").fetchone()
                started = bodies[0][1] if now is None else now[0]
                return self._append_locked(
                    cursor, run_id, expected_sequence, bodies, tables, started
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

    def _insert_events(self, cursor: Any, rows: list[tuple[Any, ...]]) -> None:
        """Insert the events' ``rows``: a long batch by COPY."""
        if len(rows) <= COPY_FROM:
            super()._insert_events(cursor, rows)
            return
        with cursor.copy("COPY events FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)

    def _fetch(self, action: str, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows ``sql`` gives, retried on a lost connection."""
        return self.retrying(action, lambda conn: conn.execute(sql.encode(), params).fetchall())

    # -- writes but appends --------------------------------------------------------------

    def _writing(self, action: str, work: Callable[[Any], T], *, flush: bool = True) -> T:
        """``work`` given a cursor in one transaction (retried whole on a lost connection);
        without ``flush`` it commits without waiting for the server's disk."""

        def attempt(conn: psycopg.Connection[Any]) -> T:
            with conn.transaction(), conn.cursor() as cursor:
                if not flush:
                    cursor.execute("SET LOCAL synchronous_commit = off")
                return work(cursor)

        return self.retrying(action, attempt)
