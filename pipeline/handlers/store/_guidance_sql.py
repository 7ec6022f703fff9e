"""People's guidance kept in a SQL store until the run takes it in (I/O): the statements of
the SQLite and the PostgreSQL stores, numbering each run's guidance 1, 2, ... in one statement
(two people guiding at once never get one number: the key refuses the second)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pipeline.handlers.store._port import Guidance

if TYPE_CHECKING:
    import psycopg

__all__ = ["pg_give", "pg_guidance", "sqlite_give", "sqlite_guidance"]

_NEXT = "COALESCE(MAX(number), 0) + 1"


def sqlite_give(db: sqlite3.Connection, run_id: str, text: str, hat: str | None) -> int:
    """Keep ``text`` for run ``run_id``'s ``hat``; its number."""
    # Every row read: the statement is done, and committed, before this returns.
    ((number,),) = db.execute(
        f"INSERT INTO guidance SELECT ?, {_NEXT}, ?, ?, ? FROM guidance WHERE run_id = ? "
        "RETURNING number",
        (run_id, hat, text, datetime.now(UTC).isoformat(), run_id),
    ).fetchall()
    return int(number)


def sqlite_guidance(db: sqlite3.Connection, run_id: str, number: int) -> list[Guidance]:
    """Run ``run_id``'s guidance numbered after ``number``, in order."""
    rows = db.execute(
        "SELECT number, hat, text, given_at FROM guidance WHERE run_id = ? AND number > ? "
        "ORDER BY number",
        (run_id, number),
    ).fetchall()
    return [
        Guidance(number=int(n), hat=h, text=str(t), given_at=datetime.fromisoformat(g))
        for n, h, t, g in rows
    ]


def pg_give(
    conn: psycopg.Connection[Any], run_id: str, text: str, hat: str | None, sent: str
) -> int | None:
    """Keep ``text`` for run ``run_id``'s ``hat``, sent under the key ``sent``; its number (the
    one kept before when this send was made already and its reply lost), or None when another
    person's guidance took that number first (try again)."""
    with conn.transaction():
        row = conn.execute(
            f"INSERT INTO guidance (run_id, number, hat, text, sent) "
            f"SELECT %s, {_NEXT}, %s, %s, %s FROM guidance WHERE run_id = %s "
            "ON CONFLICT DO NOTHING RETURNING number",
            (run_id, hat, text, sent, run_id),
        ).fetchone()
        if row is None:
            row = conn.execute(
                "SELECT number FROM guidance WHERE run_id = %s AND sent = %s", (run_id, sent)
            ).fetchone()
    return None if row is None else int(row[0])


def pg_guidance(conn: psycopg.Connection[Any], run_id: str, number: int) -> list[Guidance]:
    """Run ``run_id``'s guidance numbered after ``number``, in order."""
    rows = conn.execute(
        "SELECT number, hat, text, given_at FROM guidance WHERE run_id = %s AND number > %s "
        "ORDER BY number",
        (run_id, number),
    ).fetchall()
    return [Guidance(number=int(n), hat=h, text=str(t), given_at=g) for n, h, t, g in rows]
