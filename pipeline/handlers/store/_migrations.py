"""Numbered, idempotent schema migrations for the SQLite event store, and applying them."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Final

from pipeline.handlers.store._inbox_sql import legacy_inbox
from pipeline.handlers.store._rows import unapplied

__all__ = ["MIGRATIONS", "applied_migrations", "apply_migrations"]

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
    (
        2,
        "agent response log",
        """
        CREATE TABLE agent_response_log (
            id INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            turn_number INTEGER NOT NULL,
            raw_response TEXT,
            status TEXT NOT NULL CHECK (status IN ('SUCCESS', 'MALFORMED', 'SCHEMA_VIOLATION')),
            violations TEXT,
            correction_attempt INTEGER DEFAULT 0,
            timestamp TEXT NOT NULL DEFAULT (datetime('now'))
        );
        CREATE INDEX agent_response_log_by_run ON agent_response_log (run_id, id);
        """,
    ),
    (
        3,
        "answers to questions",
        """
        CREATE TABLE answers (
            run_id TEXT NOT NULL,
            question_id TEXT NOT NULL,
            text TEXT NOT NULL,
            answered_at TEXT NOT NULL,
            PRIMARY KEY (run_id, question_id)
        ) WITHOUT ROWID;
        """,
    ),
    (
        4,
        "hash chain of the event log",
        """
        ALTER TABLE events ADD COLUMN digest TEXT;
        ALTER TABLE runs ADD COLUMN tip TEXT;
        """,
    ),
    (
        5,
        "people's guidance",
        """
        CREATE TABLE guidance (
            run_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            hat TEXT,
            text TEXT NOT NULL,
            given_at TEXT NOT NULL,
            PRIMARY KEY (run_id, number)
        ) WITHOUT ROWID;
        """,
    ),
    (
        6,
        "the workspace's context book",
        """
        CREATE TABLE context_notes (
            number INTEGER PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            note TEXT NOT NULL
        );
        """,
    ),
    (
        7,
        "one inbox for answers, guidance and the context book",
        f"""
        CREATE TABLE inbox (
            kind TEXT NOT NULL CHECK (kind IN ('answer', 'guidance', 'note')),
            address TEXT NOT NULL,
            number INTEGER NOT NULL CHECK (number > 0),
            key TEXT,
            subject TEXT,
            text TEXT NOT NULL,
            posted_at TEXT NOT NULL,
            PRIMARY KEY (address, kind, number)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX inbox_key ON inbox (address, kind, key) WHERE key IS NOT NULL;
        INSERT INTO inbox {legacy_inbox(answers=True, guidance=True, notes=True, postgres=False)};
        DROP TABLE answers;
        DROP TABLE guidance;
        DROP TABLE context_notes;
        """,
    ),
    (
        8,
        "run summaries",
        """
        CREATE TABLE run_summaries (
            run_id TEXT PRIMARY KEY,
            sequence INTEGER NOT NULL,
            invocations INTEGER NOT NULL,
            cost_usd REAL NOT NULL,
            unknown_cost INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
    ),
    (
        9,
        "run status",
        """
        CREATE TABLE run_status (
            run_id TEXT NOT NULL,
            part TEXT NOT NULL,
            sequence INTEGER NOT NULL,
            text TEXT NOT NULL,
            PRIMARY KEY (run_id, part)
        ) WITHOUT ROWID;
        """,
    ),
)
"""(number, name, SQL) in order; each runs once, those a store lacks in one transaction. The
``agent_response_log`` table is a projection of the event log
(``pipeline.reducers.views.response_log``), written in the same transaction as the facts it
comes from, and rebuilt from the events by
``ralph projections rebuild``. ``answers`` holds what ``ralph respond`` gave for one question
of one run, until the waiting run records it as a fact (version 3). Each event's ``digest``
chains it to the one before, and ``runs.tip`` is the digest of the run's last event
(version 4; see ``_chain``): rows stored before it carry none, and their runs' chains start
with the first event appended after it. ``guidance`` holds what ``ralph guide`` gave a run,
numbered per run, until the run takes it in as a fact (version 5). ``context_notes`` is the
workspace's context book: memories and tasks as notes numbered in the order they were filed,
each kept once by its uid (version 6). ``inbox`` holds all three as messages of a kind,
addressed to a run or (``address`` empty) the workspace, numbered per addressee and kind, kept
once by ``key`` where one is given (the question's id, the note's uid); the three tables' rows
are carried into it with their numbers, and the tables dropped (version 7).
``run_summaries`` is a projection of each run's fold: its spend in all as of event ``sequence``
(the run's head when it is current), written in the same transaction as the events
(``_summaries``), so that ``ralph runs`` decodes no event; a row behind its run's head (or
none, in a store written before version 8) is not used (version 8). ``run_status`` is the
same for what ``ralph status`` shows: a run's status rows and the parts of its log they
leave out, each row keyed by the run and the part's name; a run without its ``begun`` part
(begun before version 9) or with its ``state`` behind its head is shown by folding its log
(version 9)."""


def applied_migrations(db: sqlite3.Connection) -> set[int]:
    """The numbers of the migrations applied to the store."""
    return {row[0] for row in db.execute("SELECT version FROM schema_migrations")}


def apply_migrations(db: sqlite3.Connection, label: str) -> list[int]:
    """Apply the migrations not yet applied, all in one transaction (a new store's schema
    written once: its log holds each page once, not once per migration); return their
    numbers (none the second time)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    if not unapplied(label, MIGRATIONS, applied_migrations(db)):
        return []
    db.execute("BEGIN IMMEDIATE")
    with db:  # committed, or rolled back on any error
        # Another process may have applied some while we waited for the write lock.
        pending = unapplied(label, MIGRATIONS, applied_migrations(db))
        for version, name, sql in pending:
            for statement in sql.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                (version, name, datetime.now(UTC).isoformat()),
            )
    return [version for version, _, _ in pending]
