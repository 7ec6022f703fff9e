"""Numbered, idempotent schema migrations for the PostgreSQL event store and its run queue."""

from __future__ import annotations

from typing import Final

__all__ = ["PG_MIGRATIONS"]

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
)
"""(number, name, SQL) in order; each runs once, in its own transaction, under an advisory
lock so that workers starting together do not race. Event bodies are ``JSON`` (kept as
written, queryable with ``->>``), not ``JSONB``, which refuses the ``\\u0000`` an agent's output
may hold. ``run_queue`` holds submitted pipelines; ``run_id`` is filled in by the append that
starts the run, so a worker taking a run over knows what to resume; a ticket can be
``cancelled`` from version 4. ``answers`` holds what ``ralph respond`` gave for one question of
one run, until the waiting run records it as a fact (version 5). Each event's ``digest`` chains
it to the one before and ``runs.tip`` is the digest of the run's last event (version 6; see
``_chain``): rows stored before it carry none, and their runs' chains start with the first
event appended after it."""
