"""Numbered, idempotent schema migrations for the PostgreSQL event store and its run queue
(procrastinate's schema among them), and applying them."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any, Final

import psycopg

from pipeline.handlers.store._inbox_sql import legacy_inbox
from pipeline.handlers.store._port import StoreError
from pipeline.handlers.store._rows import unapplied

__all__ = ["PG_MIGRATIONS", "applied_migrations", "apply_migrations"]

_MIGRATION_LOCK: Final = 0x7261_6C70_6800  # "ralph": one advisory lock for every migrator
_PROCRASTINATE_MIGRATION: Final = 13
"""The migration that moves the run queue to procrastinate, after applying its schema."""


def procrastinate_schema() -> str:
    """The SQL of procrastinate's schema, from the installed package (a file of its own,
    read without importing it); :class:`StoreError` when it is not installed."""
    spec = importlib.util.find_spec("procrastinate")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(
            "the run queue needs procrastinate: pip install 'ralph-pipeline[postgres]'"
        )
    return (Path(spec.submodule_search_locations[0]) / "sql" / "schema.sql").read_text("utf-8")


PG_MIGRATIONS: Final[tuple[tuple[int, str, str], ...]] = (
    (
        1,
        "event log, runs and checkpoints",
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            started_at TIMESTAMPTZ NOT NULL,
            head BIGINT NOT NULL CHECK (head >= 0)
        );
        CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            sequence BIGINT NOT NULL CHECK (sequence >= 0),
            type TEXT NOT NULL,
            schema_version INTEGER NOT NULL,
            at TIMESTAMPTZ NOT NULL,
            body JSON NOT NULL,
            PRIMARY KEY (run_id, sequence)
        );
        CREATE TABLE checkpoints (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            sequence BIGINT NOT NULL CHECK (sequence >= 0),
            format_version INTEGER NOT NULL,
            checksum TEXT NOT NULL,
            body BYTEA NOT NULL,
            PRIMARY KEY (run_id, sequence)
        );
        """,
    ),
    (
        2,
        "agent response log",
        """
        CREATE TABLE agent_response_log (
            id BIGSERIAL PRIMARY KEY,
            run_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            turn_number INTEGER NOT NULL,
            raw_response TEXT,
            status TEXT NOT NULL CHECK (status IN ('SUCCESS', 'MALFORMED', 'SCHEMA_VIOLATION')),
            violations TEXT,
            correction_attempt INTEGER DEFAULT 0,
            timestamp TEXT NOT NULL DEFAULT (now()::text)
        );
        CREATE INDEX agent_response_log_by_run ON agent_response_log (run_id, id);
        """,
    ),
    (
        3,
        "run queue",
        """
        CREATE TABLE run_queue (
            ticket TEXT PRIMARY KEY,
            workspace TEXT NOT NULL,
            config TEXT NOT NULL,
            prompt TEXT NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed')),
            run_id TEXT UNIQUE,
            worker TEXT,
            lease_expires TIMESTAMPTZ,
            claims INTEGER NOT NULL DEFAULT 0,
            outcome TEXT,
            submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE INDEX run_queue_claimable ON run_queue (state, submitted_at);
        """,
    ),
    (
        4,
        "cancelled tickets",
        """
        ALTER TABLE run_queue DROP CONSTRAINT run_queue_state_check;
        ALTER TABLE run_queue ADD CONSTRAINT run_queue_state_check
            CHECK (state IN ('queued', 'running', 'done', 'failed', 'cancelled'));
        """,
    ),
    (
        5,
        "answers to questions",
        """
        CREATE TABLE answers (
            run_id TEXT NOT NULL,
            question_id TEXT NOT NULL,
            text TEXT NOT NULL,
            answered_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, question_id)
        );
        """,
    ),
    (
        6,
        "hash chain of the event log",
        """
        ALTER TABLE events ADD COLUMN digest TEXT;
        ALTER TABLE runs ADD COLUMN tip TEXT;
        """,
    ),
    (
        7,
        "tickets waiting for a provider's reset",
        """
        ALTER TABLE run_queue ADD COLUMN not_before TIMESTAMPTZ;
        """,
    ),
    (
        8,
        "people's guidance",
        """
        CREATE TABLE guidance (
            run_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            hat TEXT,
            text TEXT NOT NULL,
            given_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            PRIMARY KEY (run_id, number)
        );
        """,
    ),
    (
        9,
        "guidance kept once however often it is sent",
        """
        ALTER TABLE guidance ADD COLUMN sent TEXT;
        CREATE UNIQUE INDEX guidance_sent ON guidance (run_id, sent) WHERE sent IS NOT NULL;
        """,
    ),
    (
        10,
        "runs numbered in the order their logs began",
        """
        ALTER TABLE runs ADD COLUMN created BIGSERIAL;
        """,
    ),
    (
        11,
        "the workspace's context book",
        """
        CREATE TABLE context_notes (
            number BIGINT PRIMARY KEY,
            uid TEXT NOT NULL UNIQUE,
            note TEXT NOT NULL
        );
        """,
    ),
    (
        12,
        "one inbox for answers, guidance and the context book",
        f"""
        CREATE TABLE inbox (
            kind TEXT NOT NULL CHECK (kind IN ('answer', 'guidance', 'note')),
            address TEXT NOT NULL,
            number BIGINT NOT NULL CHECK (number > 0),
            key TEXT,
            subject TEXT,
            text TEXT NOT NULL,
            posted_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (address, kind, number)
        );
        CREATE UNIQUE INDEX inbox_key ON inbox (address, kind, key) WHERE key IS NOT NULL;
        INSERT INTO inbox {
            legacy_inbox(answers=True, guidance=True, notes=True, postgres=True, sent=True)
        };
        DROP TABLE answers;
        DROP TABLE guidance;
        DROP TABLE context_notes;
        """,
    ),
    (
        13,
        "the run queue on procrastinate",
        """
        CREATE TABLE tickets (
            ticket TEXT PRIMARY KEY,
            job_id BIGINT NOT NULL UNIQUE REFERENCES procrastinate_jobs (id) ON DELETE CASCADE,
            run_id TEXT UNIQUE,
            worker TEXT,
            claims INTEGER NOT NULL DEFAULT 0,
            outcome TEXT,
            submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        WITH moved AS (
            INSERT INTO procrastinate_jobs (queue_name, task_name, lock, args, status, scheduled_at)
            SELECT 'ralph', 'ralph.ticket', workspace,
                jsonb_build_object('ticket', ticket, 'workspace', workspace, 'config', config,
                                   'prompt', prompt),
                CASE state WHEN 'done' THEN 'succeeded' WHEN 'failed' THEN 'failed'
                    WHEN 'cancelled' THEN 'cancelled' ELSE 'todo' END::procrastinate_job_status,
                CASE WHEN state = 'queued' THEN not_before END
            FROM run_queue ORDER BY submitted_at, ticket
            RETURNING id, args->>'ticket' AS ticket
        )
        INSERT INTO tickets
        SELECT q.ticket, moved.id, q.run_id, q.worker, q.claims, q.outcome, q.submitted_at,
            q.updated_at
        FROM moved JOIN run_queue AS q USING (ticket);
        DROP TABLE run_queue;
        """,
    ),
    (
        14,
        "remote tickets: their host, last pushed commit and files",
        """
        ALTER TABLE tickets ADD COLUMN host TEXT, ADD COLUMN pushed TEXT;
        CREATE TABLE ticket_files (
            ticket TEXT NOT NULL REFERENCES tickets ON DELETE CASCADE,
            path TEXT NOT NULL CHECK (path <> '' AND path NOT LIKE '/%'),
            body BYTEA NOT NULL,
            carried BOOLEAN NOT NULL,
            PRIMARY KEY (ticket, path)
        );
        """,
    ),
)
"""(number, name, SQL) in order; each runs once, those a database lacks in one transaction, under
an advisory lock so that workers starting together do not race. Event bodies are ``JSON`` (kept
as written, queryable with ``->>``), not ``JSONB``, which refuses the ``\\u0000`` an agent's
output may hold. ``run_queue`` holds submitted pipelines; ``run_id`` is filled in by the append
that starts the run, so a worker taking a run over knows what to resume; a ticket can be
``cancelled`` from version 4. ``answers`` holds what ``ralph respond`` gave for one question of
one run, until the waiting run records it as a fact (version 5). Each event's ``digest`` chains
it to the one before and ``runs.tip`` is the digest of the run's last event (version 6; see
``_chain``): rows stored before it carry none, and their runs' chains start with the first event
appended after it. A ticket given back while its run waits for a provider limit's reset is
claimable only from ``not_before`` (version 7). ``guidance`` holds what ``ralph guide`` gave a
run, numbered per run, until the run takes it in as a fact (version 8); each carries the key its
sender drew (``sent``), so a send repeated after a lost reply keeps it once (version 9).
``runs.created`` numbers the runs in the order their logs began, which breaks the tie between
runs that started at the same moment, as a fork and its source do (version 10; the runs an older
release left are numbered as they lie). ``context_notes`` is the workspace's context book:
memories and tasks as notes numbered in the order they were filed, each kept once by its uid
(version 11). ``inbox`` holds all three as messages of a kind, addressed to a run or
(``address`` empty) the workspace, numbered per addressee and kind, kept once by ``key`` where
one is given (the question's id, the guidance's ``sent``, the note's uid); the three tables'
rows are carried into it with their numbers, and the tables dropped (version 12). The run queue
is procrastinate's from version 13: its schema (that of the version this package requires,
applied just before) holds the tickets as jobs, ``tickets`` what ralph adds to each (its name,
run, worker, claims, outcome); every ``run_queue`` row is carried over (a running one back to
the queue, its run resumed by the next claim, which is why the old release's workers must be
stopped first), and the table dropped. A ticket records the host of its last claim and, for a
remote ticket (one of procrastinate's queue ``ralph-remote``, whose run moves between hosts
through git), the last commit pushed to its branch; ``ticket_files`` keeps a remote ticket's
setup files (``carried`` false) and its run's plan and issues (``carried`` true) (version 14;
no job is rewritten: a job without a ``remote`` argument is a path ticket)."""


def _applied(conn: psycopg.Connection[Any]) -> set[int] | None:
    """The numbers of the migrations applied to the database, read without changing it
    (None: it holds no event store)."""
    exists = conn.execute("SELECT to_regclass('schema_migrations')").fetchone()
    if exists is None or exists[0] is None:
        return None
    return {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}


def applied_migrations(conn: psycopg.Connection[Any], label: str) -> set[int]:
    """The numbers of the migrations applied to the database, read without changing it;
    :class:`StoreError` when it holds no event store."""
    applied = _applied(conn)
    if applied is None:
        raise StoreError(f"{label}: not an event store (no schema_migrations table)")
    return applied


def apply_migrations(conn: psycopg.Connection[Any], label: str) -> list[int]:
    """Apply the migrations not yet applied, in one transaction under the advisory lock;
    return their numbers (none the second time)."""
    # Every store opened checks without the lock: only a database that needs a migration
    # serializes its openers.
    if _applied(conn) == {version for version, _, _ in PG_MIGRATIONS}:
        return []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        pending = unapplied(label, PG_MIGRATIONS, applied_migrations(conn, label))
        for version, name, sql in pending:
            if version == _PROCRASTINATE_MIGRATION:
                conn.execute(procrastinate_schema())
            conn.execute(sql)  # a constant of this package, never built from input
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (version, name),
            )
    return [version for version, _, _ in pending]
