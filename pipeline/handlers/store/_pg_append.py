"""How the PostgreSQL event store writes an append (its statements, and the rows of its
projections with the text PostgreSQL cannot hold made safe), and the :class:`AppendGuard` it
checks.

The usual append (a run already started, a short batch, the run's tip known) is one
statement: one round trip. Any other is the SQL stores' append
(:meth:`~pipeline.handlers.store._sql.SqlStore._append_locked`) in a transaction that locks
the run's row while it reads and moves the head and tip. A store bound to a guard (the run
queue binds a worker's store to its lease) checks the guard's condition in the same statement
or transaction, so nothing is written once it no longer holds; the store knows nothing of what
the guard means.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import orjson
import psycopg

from pipeline.events import RunId
from pipeline.handlers.store._port import SequenceConflictError
from pipeline.handlers.store._projection import Projection, conflict_sql

__all__ = [
    "COPY_FROM",
    "AppendGuard",
    "append_in_one",
    "holds",
    "nul_free",
]

COPY_FROM: Final = 32
"""Batches longer than this go in with COPY (about ten times faster per row), shorter ones
with one pipelined INSERT (less set-up per append)."""

Written = Sequence[tuple[Projection, Sequence[tuple[Any, ...]]]]
"""The rows an append writes, with the projection of each table."""


def nul_free(text: str) -> str:
    """``text`` with every NUL replaced by U+FFFD."""
    # PostgreSQL text cannot hold NUL; the projection keeps U+FFFD where an agent wrote one
    # (the event log, JSON-escaped, keeps the exact text).
    return text.replace("\x00", "\ufffd")


def _safe(value: Any) -> Any:
    return nul_free(value) if isinstance(value, str) else value


def projected_json(projection: Projection, rows: Sequence[tuple[Any, ...]]) -> str:
    """``rows`` as the JSON array of objects the one-statement append reads them from."""
    return orjson.dumps(
        [{c: _safe(v) for c, v in zip(projection.columns, row, strict=True)} for row in rows]
    ).decode()


@functools.lru_cache(maxsize=16)
def append_sql(guard: str | None, projections: tuple[Projection, ...]) -> str:
    """The one-statement append, checking the ``guard`` condition (a SQL boolean over its own
    named parameters; None: none), writing the rows of ``projections`` (each read from the
    JSON parameter ``p0``, ``p1``, ... as records of its table's row type).

    Every CTE runs against the statement's snapshot; the inserts read ``moved``, so they
    write only when the head moved. ``set_config(..., true)`` sets ``synchronous_commit``
    for this statement's own transaction, which ends with it.
    """
    guard_check = "" if guard is None else f"AND {guard}"
    projected = ""
    for index, projection in enumerate(projections):
        columns = ", ".join(projection.columns)
        projected += f""",
    p{index}_written AS (
        INSERT INTO {projection.table} ({columns})
        SELECT {columns} FROM moved CROSS JOIN
            json_populate_recordset(NULL::{projection.table}, %(p{index})s::json)
        {conflict_sql(projection)}
        RETURNING 1
    )"""
    return f"""
    WITH sync AS (SELECT set_config('synchronous_commit', %(sync)s, true) AS value),
    moved AS (
        UPDATE runs SET head = %(head)s, tip = %(tip)s
        WHERE run_id = %(run)s AND head = %(expected)s AND tip IS NOT DISTINCT FROM %(prev)s
        {guard_check}
        RETURNING run_id AS moved_run
    ),
    written AS (
        INSERT INTO events (run_id, sequence, type, schema_version, at, body, digest)
        SELECT moved.moved_run, e.sequence, e.type, e.schema_version, e.at, e.body::json,
               e.digest
        FROM moved, unnest(%(sequences)s::bigint[], %(types)s::text[], %(versions)s::int[],
                           %(ats)s::timestamptz[], %(bodies)s::text[], %(digests)s::text[])
             AS e(sequence, type, schema_version, at, body, digest)
        RETURNING 1
    ){projected}
    SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM written), (SELECT value FROM sync)
    """


class AppendGuard(Protocol):
    """A condition every append of a bound store must meet, supplied by whoever binds it.

    ``condition`` is a SQL boolean over the guard's own ``%(name)s`` parameters
    (:meth:`parameters`), checked in the one-statement append; :meth:`check` is run in the
    transaction of any other append, and after a one-statement append the condition refused,
    to raise the error that says why (it may also record what it needs, such as the run's id).
    """

    @property
    def condition(self) -> str:
        """The SQL condition the append's head move requires."""
        ...

    def parameters(self) -> Mapping[str, Any]:
        """The values of the condition's parameters."""
        ...

    def check(
        self, conn: psycopg.Connection[Any], label: str, run_id: RunId, *, starting: bool
    ) -> None:
        """Raise a :class:`~pipeline.handlers.store.StoreError` unless the guard holds
        (``starting``: this append starts the run)."""
        ...


def append_in_one(
    conn: psycopg.Connection[Any],
    run_id: RunId,
    expected: int,
    rows: list[tuple[Any, ...]],
    written: Written,
    *,
    prev: str | None,
    guard: AppendGuard | None,
    label: str,
    sync: bool,
) -> None:
    """The usual append (a run already started, a short batch) as one statement, so one
    round trip: the conditional head move from the tip ``prev``, the guard, the events
    and the projections' rows in common table expressions, committed on their own (autocommit),
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
    if guard is not None:
        params.update(guard.parameters())
    for index, (projection, projected) in enumerate(written):
        params[f"p{index}"] = projected_json(projection, projected)
    sql = append_sql(
        None if guard is None else guard.condition, tuple(projection for projection, _ in written)
    )
    found = conn.execute(sql, params).fetchone()
    assert found is not None
    if found[0] == 1:
        return
    if guard is not None:
        with conn.transaction():
            guard.check(conn, label, run_id, starting=False)
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


def _conflict(conn: psycopg.Connection[Any], run_id: RunId, expected: int) -> SequenceConflictError:
    """The error for an append that expected ``expected`` events, naming the head found."""
    row = conn.execute("SELECT head FROM runs WHERE run_id = %s", (run_id,)).fetchone()
    return SequenceConflictError(run_id, expected, 0 if row is None else int(row[0]))
