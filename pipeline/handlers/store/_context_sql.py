"""The workspace's context book in a SQL store (I/O): notes numbered 1, 2, ... in the order
they were filed, each kept once by its uid however often it is filed.

A reader takes the notes after the last number it took, so a note must never appear under a
number below one a reader may have seen already. SQLite has one writer at a time; PostgreSQL
writers take the table's lock for the moment of their insert, so numbers are handed out in
commit order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson
from cattrs.errors import BaseValidationError

from pipeline.core.serialization import CONVERTER
from pipeline.events import ContextNote
from pipeline.handlers.store._port import BookNote, StoreCorruptError

if TYPE_CHECKING:
    import psycopg

__all__ = ["decode_note", "encode_note", "pg_file", "pg_notes", "sqlite_file", "sqlite_notes"]


def encode_note(note: ContextNote) -> str:
    """``note`` as the book stores it (JSON text)."""
    return orjson.dumps(CONVERTER.unstructure(note)).decode()


def decode_note(label: str, number: int, text: str) -> BookNote:
    """Note ``number`` read back; :class:`StoreCorruptError` names it when it is damaged."""
    try:
        return BookNote(number=number, note=CONVERTER.structure(orjson.loads(text), ContextNote))
    except (orjson.JSONDecodeError, BaseValidationError, ValueError, TypeError) as error:
        raise StoreCorruptError(
            f"{label}: note {number} of the context book is damaged: {error}"
        ) from error


def sqlite_file(db: sqlite3.Connection, notes: Sequence[ContextNote]) -> None:
    """File ``notes`` in one transaction (a uid filed before is passed over)."""
    with db:
        db.executemany(
            "INSERT INTO context_notes (uid, note) VALUES (?, ?) ON CONFLICT (uid) DO NOTHING",
            [(note.uid, encode_note(note)) for note in notes],
        )


def sqlite_notes(db: sqlite3.Connection, label: str, number: int) -> list[BookNote]:
    """The notes numbered after ``number``, in order (none in a store an older release made
    and nobody has written to since: opened to read, it is not migrated)."""
    try:
        rows = db.execute(
            "SELECT number, note FROM context_notes WHERE number > ? ORDER BY number", (number,)
        ).fetchall()
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return []
        raise
    return [decode_note(label, int(n), str(text)) for n, text in rows]


def pg_file(conn: psycopg.Connection[Any], notes: Sequence[ContextNote]) -> None:
    """File ``notes`` in one transaction (a uid filed before is passed over)."""
    with conn.transaction():
        # Numbers in commit order: a reader never finds a gap filled in later.
        conn.execute("LOCK TABLE context_notes IN EXCLUSIVE MODE")
        for note in notes:
            conn.execute(
                "INSERT INTO context_notes (number, uid, note) "
                "SELECT COALESCE(MAX(number), 0) + 1, %s, %s FROM context_notes "
                "ON CONFLICT (uid) DO NOTHING",
                (note.uid, encode_note(note)),
            )


def pg_notes(conn: psycopg.Connection[Any], label: str, number: int) -> list[BookNote]:
    """The notes numbered after ``number``, in order (none in a database an older release
    made: a read-only session does not migrate it)."""
    exists = conn.execute("SELECT to_regclass('context_notes')").fetchone()
    if exists is None or exists[0] is None:
        return []
    rows = conn.execute(
        "SELECT number, note FROM context_notes WHERE number > %s ORDER BY number", (number,)
    ).fetchall()
    return [decode_note(label, int(n), str(text)) for n, text in rows]
