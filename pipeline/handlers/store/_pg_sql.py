"""The PostgreSQL event store's longer statements: the batched read, the one-statement
appends, and the writing of projections' rows (with the text PostgreSQL cannot hold made
safe)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final

import orjson
import psycopg

from pipeline.handlers.store._projection import Projection, conflict_sql, upsert_sql

__all__ = ["READ_SQL", "Written", "append_sql", "nul_free", "projected_json", "write_rows"]

Written = Sequence[tuple[Projection, Sequence[tuple[Any, ...]]]]
"""The rows an append writes, with the projection of each table."""

READ_SQL: Final = """
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


def nul_free(text: str) -> str:
    """``text`` with every NUL replaced by U+FFFD."""
    # PostgreSQL text cannot hold NUL; the projection keeps U+FFFD where an agent wrote one
    # (the event log, JSON-escaped, keeps the exact text).
    return text.replace("\x00", "\ufffd")


def _safe(value: Any) -> Any:
    return nul_free(value) if isinstance(value, str) else value


def write_rows(cursor: psycopg.Cursor[Any], written: Written) -> None:
    """Write each projection's rows (inside the caller's transaction)."""
    for projection, rows in written:
        if rows:
            cursor.executemany(
                upsert_sql(projection, "%s").encode(),
                [tuple(_safe(value) for value in row) for row in rows],
                returning=False,
            )


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
