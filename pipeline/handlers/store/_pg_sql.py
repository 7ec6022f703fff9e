"""The PostgreSQL event store's longer statements: the batched read, the one-statement
appends, and the insert of response rows (with the text PostgreSQL cannot hold made safe)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final

import psycopg

from pipeline.events import RunId
from pipeline.handlers.store._rows import response_values
from pipeline.reducers.views import ResponseLogRow

__all__ = ["READ_SQL", "append_sql", "insert_responses", "nul_free"]

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


def insert_responses(
    cursor: psycopg.Cursor[Any], run_id: RunId, rows: Sequence[ResponseLogRow]
) -> None:
    """Insert the run's ``agent_response_log`` rows."""
    cursor.executemany(
        "INSERT INTO agent_response_log (run_id, task_id, turn_number, raw_response, status, "
        "violations, correction_attempt, timestamp) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        response_values(run_id, rows, nul_free),
        returning=False,
    )


@functools.lru_cache(maxsize=16)
def append_sql(guard: str | None, responses: bool) -> str:
    """The one-statement append, checking the ``guard`` condition (a SQL boolean over its own
    named parameters; None: none), writing response rows or not.

    Every CTE runs against the statement's snapshot; the inserts read ``moved``, so they
    write only when the head moved. ``set_config(..., true)`` sets ``synchronous_commit``
    for this statement's own transaction, which ends with it.
    """
    guard_check = "" if guard is None else f"AND {guard}"
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
        {guard_check}
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
