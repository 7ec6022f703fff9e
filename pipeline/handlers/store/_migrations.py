"""Numbered, idempotent schema migrations for the SQLite event store."""

from __future__ import annotations

from typing import Final

__all__ = ["MIGRATIONS"]

MIGRATIONS: Final[tuple[tuple[int, str, str], ...]] = (
    (
        1,
        "event log, runs and checkpoints",
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            started_at TEXT NOT NULL,
            head INTEGER NOT NULL CHECK (head >= 0)
        );
        CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            sequence INTEGER NOT NULL CHECK (sequence >= 0),
            type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            at TEXT NOT NULL,
            body BLOB NOT NULL,
            PRIMARY KEY (run_id, sequence)
        ) WITHOUT ROWID;
        CREATE TABLE checkpoints (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            sequence INTEGER NOT NULL CHECK (sequence >= 0),
            format_version INTEGER NOT NULL,
            checksum TEXT NOT NULL,
            body BLOB NOT NULL,
            PRIMARY KEY (run_id, sequence)
        ) WITHOUT ROWID;
        """,
    ),
)
"""(number, name, SQL) in order; each runs once, in its own transaction."""
