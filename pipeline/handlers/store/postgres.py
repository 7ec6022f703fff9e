"""The PostgreSQL event store (the optional extra ``postgres``): one database shared by many
workers on many machines.

Same contract as the SQLite store (``tests/handlers/store/contract.py`` runs against both).
One transaction per append: the run's head is checked and moved by one conditional
``UPDATE`` (PostgreSQL re-checks its ``WHERE`` after a concurrent writer commits, so of two
appenders expecting the same head exactly one moves it), then the events and their response
rows are inserted. An append asked not to flush commits with ``synchronous_commit = off``.

Bound to a :class:`Lease`, every append also locks the run's queue row and checks that this
worker still holds it, so a worker that lost its lease (stalled past it, taken over) cannot
write another event.

A dropped connection is reopened with backoff, within ``retry_s`` seconds; an append retried
after its connection dropped during the commit finds its own events stored and succeeds.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, TypeVar

import orjson
import psycopg
from attrs import frozen
from psycopg.conninfo import conninfo_to_dict

from pipeline.events import SCHEMA_VERSION, WIRE_TAGS, PipelineEvent, RunId
from pipeline.handlers.redaction import mask_password_of
from pipeline.handlers.store._chain import ChainCheck, chain_start, link
from pipeline.handlers.store._pg_migrations import PG_MIGRATIONS
from pipeline.handlers.store._port import (
    AnswerTakenError,
    LeaseLostError,
    RunSummary,
    SequenceConflictError,
    StoredResponse,
    StoreError,
)
from pipeline.handlers.store._rows import (
    RESPONSE_COLUMNS,
    LegacyVerdicts,
    check_sequence,
    choose_run,
    decode_row,
    refuse_newer_schema,
    response_values,
    stored_response,
)
from pipeline.serialization import EncodedCheckpoint, unstructure_event
from pipeline.views import ResponseLogRow, response_log

__all__ = ["Lease", "PostgresEventStore", "describe_url"]

_READ_BATCH: Final = 1_000
_COPY_FROM: Final = 32
"""Batches longer than this go in with COPY (about ten times faster per row), shorter ones
with one pipelined INSERT (less set-up per append)."""
_PERMANENT: Final = (
    "does not exist",
    "authentication failed",
    "no pg_hba.conf entry",
    "permission denied",
)
"""What a server answers to a connection that no retry will cure (a missing database or
role, refused credentials). libpq gives these no SQLSTATE, so they are told by their text;
a server starting up or shutting down says otherwise, and is retried."""
_READ_SQL: Final = """
    SELECT e.sequence, e.type, e.schema_version, e.body::text, e.digest, r.head, r.{tip}
    FROM runs AS r
    LEFT JOIN LATERAL (
        SELECT sequence, type, schema_version, body, {digest} AS digest FROM events
        WHERE events.run_id = r.run_id AND sequence >= %s ORDER BY sequence LIMIT %s
    ) AS e ON true
    WHERE r.run_id = %s
"""
"""A batch of a run's events with the run's head and tip on every row: one statement, so
one snapshot (a run with no events in the batch gives one row of NULL events)."""
_CHAIN_MIGRATION: Final = 6
"""The migration that added the hash chain's columns."""
_MIGRATION_LOCK: Final = 0x7261_6C70_6800  # "ralph": one advisory lock for every migrator

T = TypeVar("T")


@frozen
class Lease:
    """The claim a worker holds on a queued run: appends check it is still this worker's."""

    ticket: str
    worker: str


def describe_url(url: str) -> str:
    """``url`` without its password, for messages: ``postgresql://user@host:port/db``."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return mask_password_of(url, url)  # as given, to be corrected: less its password
    user = f"{parts['user']}@" if parts.get("user") else ""
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{parts.get('host', 'localhost')}{port}/{parts.get('dbname', '')}"


class PostgresEventStore:
    """An :class:`~pipeline.handlers.store.EventStore` in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user@host:5432/db``). ``synchronous_commit`` False
    commits every append without waiting for the server's disk (the ``process`` durability).
    ``retry_s`` bounds how long a lost or refused connection is retried before
    :class:`StoreError` says the database is unreachable.
    """

    def __init__(
        self,
        url: str,
        *,
        lease: Lease | None = None,
        synchronous_commit: bool = True,
        retry_s: float = 10.0,
        read_only: bool = False,
    ) -> None:
        self.url = url
        self.label = describe_url(url)
        self.lease = lease
        self.synchronous_commit = synchronous_commit
        self.retry_s = retry_s
        self.read_only = read_only
        """Opened to read only: never migrated, every transaction of the session read-only
        (a write fails in the server), works for a role that may only SELECT."""
        self._digest, self._tip = "digest", "tip"
        """The columns of the hash chain, or NULL in a database an older release left."""
        self._conn: psycopg.Connection[Any] | None = None
        self._tips: dict[RunId, tuple[int, str | None]] = {}
        """Per run this process appended to: the head and tip it left, so the usual append
        (one statement) can chain its events without reading the tip first."""
        self._connect()
        if read_only:
            self._check_schema()
        else:
            self.migrate()

    # -- connections -------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        """An open connection, reconnecting with backoff for up to ``retry_s`` seconds."""
        if self._conn is not None and not self._conn.closed:
            return self._conn
        deadline = time.monotonic() + self.retry_s
        delay = 0.05
        while True:
            try:
                conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            except psycopg.OperationalError as error:
                reason = str(error).strip().splitlines()[-1] if str(error).strip() else ""
                if any(answer in reason for answer in _PERMANENT):
                    raise StoreError(f"{self.label}: the server refused: {reason}") from error
                if time.monotonic() + delay > deadline:
                    raise StoreError(
                        f"{self.label}: cannot reach the PostgreSQL server ({reason}); "
                        "is it running, and does the URL name the right host, port and database?"
                    ) from error
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
                continue
            except psycopg.ProgrammingError as error:
                # psycopg quotes the URL, password and all
                why = mask_password_of(self.url, str(error))
                raise StoreError(f"{self.label}: not a usable PostgreSQL URL: {why}") from error
            # Times come back in UTC, as the SQLite store writes them.
            conn.execute("SET TIME ZONE 'UTC'")
            if not self.synchronous_commit:
                conn.execute("SET synchronous_commit = off")
            if self.read_only:
                conn.execute("SET default_transaction_read_only = on")
            # A process frozen inside a transaction (an append holding its run's queue row,
            # a migration holding the migration lock) would block every other worker: the
            # server ends such a session. Our transactions never wait on the client.
            conn.execute("SET idle_in_transaction_session_timeout = '5s'")
            self._conn = conn
            return conn

    def retrying(self, action: str, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` on a live connection; a connection lost midway is reopened and ``work``
        tried again (within ``retry_s``), so ``work`` must be safe to repeat. Other database
        errors become :class:`StoreError` saying it could not ``action``."""
        deadline = time.monotonic() + self.retry_s
        while True:
            conn = self._connect()
            try:
                return work(conn)
            except psycopg.OperationalError as error:
                if not conn.closed and not conn.broken:
                    raise StoreError(f"{self.label}: could not {action}: {error}") from error
                conn.close()
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"{self.label}: could not {action}: the connection was lost ({error})"
                    ) from error
            except psycopg.Error as error:
                raise StoreError(f"{self.label}: could not {action}: {error}") from error

    def _check_schema(self) -> None:
        """For a reader: refuse a schema from a newer release, and read an older one as it is
        (no digests before the hash chain's migration); nothing is changed."""

        def applied(conn: psycopg.Connection[Any]) -> set[int]:
            exists = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
            if exists is None or exists[0] is None:
                raise StoreError(f"{self.label}: not an event store (no schema_migrations table)")
            return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}

        versions = self.retrying("read the schema version", applied)
        refuse_newer_schema(self.label, versions, {version for version, _, _ in PG_MIGRATIONS})
        if _CHAIN_MIGRATION not in versions:
            self._digest, self._tip = "NULL", "NULL"

    def migrate(self) -> list[int]:
        """Apply the migrations not yet applied; return their numbers (none the second time)."""

        known_versions = {version for version, _, _ in PG_MIGRATIONS}

        def up_to_date(conn: psycopg.Connection[Any]) -> bool:
            """Whether every migration is applied, found without taking the lock (every store
            opened checks; only a database that needs a migration serializes its openers)."""
            exists = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
            if exists is None or exists[0] is None:
                return False
            rows = conn.execute("SELECT version FROM schema_migrations").fetchall()
            return {row[0] for row in rows} == known_versions

        def work(conn: psycopg.Connection[Any]) -> list[int]:
            done: list[int] = []
            if up_to_date(conn):
                return done
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                    "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
                )
                applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
                refuse_newer_schema(self.label, applied, known_versions)
                for version, name, sql in PG_MIGRATIONS:
                    if version in applied:
                        continue
                    conn.execute(sql)  # a constant of this package, never built from input
                    conn.execute(
                        "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                        (version, name),
                    )
                    done.append(version)
            return done

        return self.retrying("migrate the schema", work)

    # -- the log -----------------------------------------------------------------------

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        responses: Sequence[ResponseLogRow] = (),
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` in one transaction if the log holds ``expected_sequence`` events
        (and, with a lease, this worker still holds it), with their response rows."""
        bodies = [
            (WIRE_TAGS[type(event)], event.at, orjson.dumps(unstructure_event(event)).decode())
            for event in events
        ]
        head = expected_sequence + len(bodies)
        attempts = 0

        def work(conn: psycopg.Connection[Any]) -> int:
            nonlocal attempts
            attempts += 1
            known = self._tips.get(run_id)
            try:
                if (
                    known is not None
                    and known[0] == expected_sequence > 0
                    and 0 < len(bodies) <= _COPY_FROM
                ):
                    rows = _chained(run_id, expected_sequence, bodies, known[1])
                    try:
                        self._append_in_one(conn, run_id, expected_sequence, rows, responses, flush)
                    except SequenceConflictError as error:
                        if error.actual != expected_sequence:
                            raise
                        # The head is where this process left it, its tip is not: read both
                        # afresh under the row's lock.
                        rows = self._append(
                            conn, run_id, expected_sequence, bodies, responses, flush=flush
                        )
                else:
                    rows = self._append(
                        conn, run_id, expected_sequence, bodies, responses, flush=flush
                    )
            except SequenceConflictError:
                self._tips.pop(run_id, None)
                # A retry after a commit whose answer was lost: the events may be ours.
                if attempts > 1 and self._holds(conn, run_id, expected_sequence, bodies):
                    return head
                raise
            if rows:
                self._tips[run_id] = (head, rows[-1][-1])
            return head

        return self.retrying(f"append to run {run_id!r}", work)

    def _append(
        self,
        conn: psycopg.Connection[Any],
        run_id: RunId,
        expected: int,
        bodies: list[tuple[str, Any, str]],
        responses: Sequence[ResponseLogRow],
        *,
        flush: bool,
    ) -> list[tuple[Any, ...]]:
        """Append in one transaction, the run's row locked while its tip is read and moved;
        returns the rows written."""
        head = expected + len(bodies)
        with conn.transaction():
            if not flush and self.synchronous_commit:
                conn.execute("SET LOCAL synchronous_commit = off")
            if self.lease is not None:
                self._check_lease(conn, run_id, starting=expected == 0)
            found = conn.execute(
                "SELECT head, tip FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)
            ).fetchone()
            actual = 0 if found is None else int(found[0])
            if actual != expected:
                raise SequenceConflictError(run_id, expected, actual)
            rows = _chained(run_id, expected, bodies, None if found is None else found[1])
            tip = rows[-1][-1] if rows else None if found is None else found[1]
            if found is None:
                started = bodies[0][1] if bodies else None
                moved = conn.execute(
                    "INSERT INTO runs VALUES (%s, coalesce(%s, now()), %s, %s) "
                    "ON CONFLICT (run_id) DO NOTHING",
                    (run_id, started, head, tip),
                ).rowcount
                if not moved:
                    raise _conflict(conn, run_id, expected)
            else:
                conn.execute(
                    "UPDATE runs SET head = %s, tip = %s WHERE run_id = %s", (head, tip, run_id)
                )
            with conn.cursor() as cursor:
                if len(rows) > _COPY_FROM:
                    with cursor.copy("COPY events FROM STDIN") as copy:
                        for row in rows:
                            copy.write_row(row)
                else:
                    cursor.executemany(
                        "INSERT INTO events VALUES (%s, %s, %s, %s, %s, %s, %s)",
                        rows,
                        returning=False,
                    )
                if responses:
                    _insert_responses(cursor, run_id, responses)
        return rows

    def _append_in_one(
        self,
        conn: psycopg.Connection[Any],
        run_id: RunId,
        expected: int,
        rows: list[tuple[Any, ...]],
        responses: Sequence[ResponseLogRow],
        flush: bool,
    ) -> None:
        """The usual append (a run already started, a short batch) as one statement, so one
        round trip: the conditional head move, the lease check, the events and the response
        rows in common table expressions, committed on their own (autocommit)."""
        params: dict[str, Any] = {
            "run": run_id,
            "expected": expected,
            "head": expected + len(rows),
            "sequences": [row[1] for row in rows],
            "types": [row[2] for row in rows],
            "versions": [row[3] for row in rows],
            "ats": [row[4] for row in rows],
            "bodies": [row[5] for row in rows],
            "digests": [row[6] for row in rows],
            "prev": self._tips[run_id][1],
            "tip": rows[-1][6],
            # Synced only when asked and the store syncs at all ("process" never does).
            "sync": "on" if flush and self.synchronous_commit else "off",
        }
        lease = self.lease
        if lease is not None:
            params["ticket"], params["worker"] = lease.ticket, lease.worker
        if responses:
            response_rows = response_values(run_id, responses, _nul_free)
            for index, name in enumerate(RESPONSE_COLUMNS):
                params[f"r_{name}"] = [row[index + 1] for row in response_rows]
        sql = _APPEND_SQL[lease is not None, bool(responses)]
        found = conn.execute(sql, params).fetchone()
        assert found is not None
        if found[0] == 1:
            return
        if lease is not None:
            with conn.transaction():
                self._check_lease(conn, run_id, starting=False)
        raise _conflict(conn, run_id, expected)

    def _check_lease(self, conn: psycopg.Connection[Any], run_id: RunId, *, starting: bool) -> None:
        """Lock the run's queue row (a takeover waits for this append, or this append sees
        the takeover) and check it is still ours; the append that starts the run records its
        id there, so a worker taking over knows what to resume."""
        lease = self.lease
        assert lease is not None
        row = conn.execute(
            "SELECT worker, state FROM run_queue WHERE ticket = %s FOR SHARE", (lease.ticket,)
        ).fetchone()
        if row is None or row[0] != lease.worker or row[1] != "running":
            holder = "nobody" if row is None or row[0] is None else f"worker {row[0]}"
            raise LeaseLostError(
                f"{self.label}: worker {lease.worker} no longer holds run {lease.ticket} "
                f"(now held by {holder}); nothing was written"
            )
        if starting:
            conn.execute(
                "UPDATE run_queue SET run_id = %s, updated_at = now() WHERE ticket = %s",
                (run_id, lease.ticket),
            )

    @staticmethod
    def _holds(
        conn: psycopg.Connection[Any],
        run_id: RunId,
        expected: int,
        bodies: list[tuple[str, Any, str]],
    ) -> bool:
        """Whether the log holds exactly ``bodies`` from ``expected`` on."""
        stored = conn.execute(
            "SELECT body::text FROM events WHERE run_id = %s AND sequence >= %s "
            "AND sequence < %s ORDER BY sequence",
            (run_id, expected, expected + len(bodies)),
        ).fetchall()
        return [orjson.loads(s[0]) for s in stored] == [orjson.loads(b[2]) for b in bodies]

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
                sql = _READ_SQL.format(digest=self._digest, tip=self._tip)
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
                "SELECT run_id, head, started_at FROM runs ORDER BY started_at, run_id"
            ).fetchall(),
        )
        return [RunSummary(RunId(r), int(h), started.isoformat()) for r, h, started in rows]

    def ensure_present(self) -> None:
        """A database server's store cannot be deleted under an open connection: a no-op."""

    def choose_run(self, run_id: str | None) -> RunId:
        """``run_id`` when the store holds it, or the latest run when None;
        :class:`UnknownRunError` naming the runs it holds otherwise."""
        return choose_run(self.label, [r.run_id for r in self.runs()], run_id)

    # -- projections and checkpoints ---------------------------------------------------

    def response_log(self, run_id: RunId) -> list[StoredResponse]:
        """The run's ``agent_response_log`` rows, in order."""
        rows = self.retrying(
            f"read the response log of run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT id, run_id, task_id, turn_number, raw_response, status, violations, "
                "correction_attempt, timestamp FROM agent_response_log WHERE run_id = %s "
                "ORDER BY id",
                (run_id,),
            ).fetchall(),
        )
        return [stored_response(row) for row in rows]

    def rebuild_response_log(self) -> int:
        """Recreate ``agent_response_log`` from every run's events, in one transaction."""

        def work(conn: psycopg.Connection[Any]) -> int:
            count = 0
            with conn.transaction(), conn.cursor() as cursor:
                cursor.execute("DELETE FROM agent_response_log")
                for run in self.runs():
                    rows = list(response_log(self.read(run.run_id)))
                    _insert_responses(cursor, run.run_id, rows)
                    count += len(rows)
            return count

        return self.retrying("rebuild the response log", work)

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
        return [EncodedCheckpoint(int(s), int(v), str(c), bytes(b)) for s, v, c, b in rows]

    def give_answer(self, run_id: RunId, question_id: str, text: str) -> None:
        """Keep the answer to one question of one run; the first answer stands."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                cursor = conn.execute(
                    "INSERT INTO answers (run_id, question_id, text) VALUES (%s, %s, %s) "
                    "ON CONFLICT (run_id, question_id) DO NOTHING",
                    (run_id, question_id, _nul_free(text)),
                )
                return cursor.rowcount == 1

        if not self.retrying(f"answer question {question_id!r} of run {run_id!r}", work):
            raise AnswerTakenError(f"question {question_id} of run {run_id} was answered already")

    def answer(self, run_id: RunId, question_id: str) -> str | None:
        """The answer given to one question of one run, if any."""
        row = self.retrying(
            f"read the answer to question {question_id!r} of run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT text FROM answers WHERE run_id = %s AND question_id = %s",
                (run_id, question_id),
            ).fetchone(),
        )
        return None if row is None else str(row[0])

    def connection(self) -> psycopg.Connection[Any]:
        """The store's live connection (reopened if it was lost), for the run queue."""
        return self._connect()

    def close(self) -> None:
        """Close the connection."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None

    def __enter__(self) -> PostgresEventStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _chained(
    run_id: RunId, expected: int, bodies: list[tuple[str, Any, str]], tip: str | None
) -> list[tuple[Any, ...]]:
    """The rows of ``bodies`` (type, time, body) appended after an event whose digest is
    ``tip``: ``(run_id, sequence, type, schema_version, at, body, digest)``."""
    rows = []
    for offset, (tag, at, body) in enumerate(bodies):
        sequence = expected + offset
        tip = link(tip, run_id, sequence, tag, SCHEMA_VERSION, body)
        rows.append((run_id, sequence, tag, SCHEMA_VERSION, at, body, tip))
    return rows


def _conflict(conn: psycopg.Connection[Any], run_id: RunId, expected: int) -> SequenceConflictError:
    """The error for an append that expected ``expected`` events, naming the head found."""
    row = conn.execute("SELECT head FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return SequenceConflictError(run_id, expected, 0 if row is None else int(row[0]))


def _nul_free(text: str) -> str:
    # PostgreSQL text cannot hold NUL; the projection keeps U+FFFD where an agent wrote one
    # (the event log, JSON-escaped, keeps the exact text).
    return text.replace("\x00", "\ufffd")


def _insert_responses(
    cursor: psycopg.Cursor[Any], run_id: RunId, rows: Sequence[ResponseLogRow]
) -> None:
    cursor.executemany(
        "INSERT INTO agent_response_log (run_id, task_id, turn_number, raw_response, status, "
        "violations, correction_attempt, timestamp) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        response_values(run_id, rows, _nul_free),
        returning=False,
    )


def _append_sql(*, leased: bool, responses: bool) -> str:
    """The one-statement append, checking the lease or not, writing response rows or not.

    Every CTE runs against the statement's snapshot; the inserts read ``moved``, so they
    write only when the head moved. ``set_config(..., true)`` sets ``synchronous_commit``
    for this statement's own transaction, which ends with it.
    """
    lease_check = (
        "AND EXISTS (SELECT 1 FROM run_queue WHERE ticket = %(ticket)s AND worker = %(worker)s "
        "AND state = 'running' FOR SHARE)"
        if leased
        else ""
    )
    responded = (
        """,
    responded AS (
        INSERT INTO agent_response_log (run_id, task_id, turn_number, raw_response, status,
                                        violations, correction_attempt, timestamp)
        SELECT moved.run_id, r.*
        FROM moved, unnest(%(r_task_id)s::text[], %(r_turn_number)s::int[],
                           %(r_raw_response)s::text[], %(r_status)s::text[],
                           %(r_violations)s::text[], %(r_correction_attempt)s::int[],
                           %(r_timestamp)s::text[])
             AS r(task_id, turn_number, raw_response, status, violations,
                  correction_attempt, timestamp)
        RETURNING 1
    )"""
        if responses
        else ""
    )
    return f"""
    WITH sync AS (SELECT set_config('synchronous_commit', %(sync)s, true) AS value),
    moved AS (
        UPDATE runs SET head = %(head)s, tip = %(tip)s
        WHERE run_id = %(run)s AND head = %(expected)s AND tip IS NOT DISTINCT FROM %(prev)s
        {lease_check}
        RETURNING run_id
    ),
    written AS (
        INSERT INTO events (run_id, sequence, type, schema_version, at, body, digest)
        SELECT moved.run_id, e.sequence, e.type, e.schema_version, e.at, e.body::json, e.digest
        FROM moved, unnest(%(sequences)s::bigint[], %(types)s::text[], %(versions)s::int[],
                           %(ats)s::timestamptz[], %(bodies)s::text[], %(digests)s::text[])
             AS e(sequence, type, schema_version, at, body, digest)
        RETURNING 1
    ){responded}
    SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM written), (SELECT value FROM sync)
    """


_APPEND_SQL: Final = {
    (leased, responses): _append_sql(leased=leased, responses=responses)
    for leased in (False, True)
    for responses in (False, True)
}
"""The four one-statement appends, by (leased, with response rows)."""
