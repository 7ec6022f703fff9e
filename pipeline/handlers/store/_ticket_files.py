"""The files a remote ticket keeps in the store (``ticket_files``, migration 14), in SQL on a
connection the run queue gives (I/O): the setup files ``submit`` read in the person's clone
(``carried`` false), and a run's ``.agent/PLAN.md`` and ``ISSUES.md`` as its worker last
carried them (``carried`` true), so that a worker on another host can make the ticket's
repository again."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg

__all__ = ["carry_file", "insert_setup", "ticket_files"]


def insert_setup(conn: psycopg.Connection[Any], ticket: str, files: Mapping[str, bytes]) -> None:
    """Keep ``ticket``'s setup files (in the transaction that queues it)."""
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO ticket_files (ticket, path, body, carried) VALUES (%s, %s, %s, false)",
            [(ticket, path, body) for path, body in files.items()],
        )


def carry_file(
    conn: psycopg.Connection[Any], held: str, params: Mapping[str, Any], path: str, body: bytes
) -> bool:
    """Keep ``body`` as the run's file ``path`` (replacing what was kept) while the condition
    ``held`` (the lease's, with its ``params``) holds; False, and nothing kept, once not."""
    done = conn.execute(
        "INSERT INTO ticket_files (ticket, path, body, carried) "
        f"SELECT %(ticket)s, %(path)s, %(body)s, true WHERE {held} "
        "ON CONFLICT (ticket, path) DO UPDATE SET body = excluded.body, carried = true",
        {**params, "path": path, "body": body},
    )
    return done.rowcount == 1


def ticket_files(conn: psycopg.Connection[Any], ticket: str, *, carried: bool) -> dict[str, bytes]:
    """``ticket``'s setup files (``carried`` false) or its run's carried files, by path."""
    rows = conn.execute(
        "SELECT path, body FROM ticket_files WHERE ticket = %s AND carried = %s ORDER BY path",
        (ticket, carried),
    )
    return {path: bytes(body) for path, body in rows}
