"""How the PostgreSQL event store writes an append, and the :class:`Lease` it checks.

The usual append (a run already started, a short batch, the run's tip known) is one
statement: one round trip. Any other is a transaction that locks the run's row while it
reads and moves the head and tip. Bound to a lease, both lock the run's queue row and check
that this worker still holds it before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson
import psycopg
from attrs import frozen

from pipeline.events import SCHEMA_VERSION, RunId
from pipeline.handlers.store._chain import link
from pipeline.handlers.store._pg_sql import APPEND_SQL, insert_responses, nul_free
from pipeline.handlers.store._port import LeaseLostError, SequenceConflictError
from pipeline.handlers.store._rows import RESPONSE_COLUMNS, response_values
from pipeline.views import ResponseLogRow

__all__ = [
    "COPY_FROM",
    "Lease",
    "append_in_one",
    "append_under_lock",
    "chained",
    "holds",
]

COPY_FROM: Final = 32
"""Batches longer than this go in with COPY (about ten times faster per row), shorter ones
with one pipelined INSERT (less set-up per append)."""


@frozen
class Lease:
    """The claim a worker holds on a queued run: appends check it is still this worker's."""

    ticket: str
    worker: str


def chained(
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


def append_under_lock(
    conn: psycopg.Connection[Any],
    run_id: RunId,
    expected: int,
    bodies: list[tuple[str, Any, str]],
    responses: Sequence[ResponseLogRow],
    *,
    lease: Lease | None,
    label: str,
    unsynced: bool,
) -> list[tuple[Any, ...]]:
    """Append in one transaction, the run's row locked while its tip is read and moved;
    returns the rows written. ``unsynced`` commits it without waiting for the server's disk
    (where the session waits)."""
    head = expected + len(bodies)
    with conn.transaction():
        if unsynced:
            conn.execute("SET LOCAL synchronous_commit = off")
        if lease is not None:
            _check_lease(conn, lease, label, run_id, starting=expected == 0)
        found = conn.execute(
            "SELECT head, tip FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)
        ).fetchone()
        actual = 0 if found is None else int(found[0])
        if actual != expected:
            raise SequenceConflictError(run_id, expected, actual)
        rows = chained(run_id, expected, bodies, None if found is None else found[1])
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
            if len(rows) > COPY_FROM:
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
                insert_responses(cursor, run_id, responses)
    return rows


def append_in_one(
    conn: psycopg.Connection[Any],
    run_id: RunId,
    expected: int,
    rows: list[tuple[Any, ...]],
    responses: Sequence[ResponseLogRow],
    *,
    prev: str | None,
    lease: Lease | None,
    label: str,
    sync: bool,
) -> None:
    """The usual append (a run already started, a short batch) as one statement, so one
    round trip: the conditional head move from the tip ``prev``, the lease check, the events
    and the response rows in common table expressions, committed on their own (autocommit),
    waiting for the server's disk when ``sync``."""
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
        "prev": prev,
        "tip": rows[-1][6],
        "sync": "on" if sync else "off",
    }
    if lease is not None:
        params["ticket"], params["worker"] = lease.ticket, lease.worker
    if responses:
        response_rows = response_values(run_id, responses, nul_free)
        for index, name in enumerate(RESPONSE_COLUMNS):
            params[f"r_{name}"] = [row[index + 1] for row in response_rows]
    sql = APPEND_SQL[lease is not None, bool(responses)]
    found = conn.execute(sql, params).fetchone()
    assert found is not None
    if found[0] == 1:
        return
    if lease is not None:
        with conn.transaction():
            _check_lease(conn, lease, label, run_id, starting=False)
    raise _conflict(conn, run_id, expected)


def holds(
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


def _check_lease(
    conn: psycopg.Connection[Any], lease: Lease, label: str, run_id: RunId, *, starting: bool
) -> None:
    """Lock the run's queue row (a takeover waits for this append, or this append sees
    the takeover) and check it is still ours; the append that starts the run records its
    id there, so a worker taking over knows what to resume."""
    row = conn.execute(
        "SELECT worker, state FROM run_queue WHERE ticket = %s FOR SHARE", (lease.ticket,)
    ).fetchone()
    if row is None or row[0] != lease.worker or row[1] != "running":
        holder = "nobody" if row is None or row[0] is None else f"worker {row[0]}"
        raise LeaseLostError(
            f"{label}: worker {lease.worker} no longer holds run {lease.ticket} "
            f"(now held by {holder}); nothing was written"
        )
    if starting:
        conn.execute(
            "UPDATE run_queue SET run_id = %s, updated_at = now() WHERE ticket = %s",
            (run_id, lease.ticket),
        )


def _conflict(conn: psycopg.Connection[Any], run_id: RunId, expected: int) -> SequenceConflictError:
    """The error for an append that expected ``expected`` events, naming the head found."""
    row = conn.execute("SELECT head FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return SequenceConflictError(run_id, expected, 0 if row is None else int(row[0]))
