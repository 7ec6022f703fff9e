"""The answers, the guidance and the context book of a PostgreSQL store (I/O): what people
give runs, and the workspace's memories and tasks, beside the event log."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

import psycopg

from pipeline.events import ContextNote, RunId
from pipeline.handlers.store._context_sql import pg_file, pg_notes
from pipeline.handlers.store._guidance_sql import pg_give, pg_guidance
from pipeline.handlers.store._pg_connection import PgSession
from pipeline.handlers.store._pg_sql import nul_free
from pipeline.handlers.store._port import AnswerTakenError, BookNote, Guidance

__all__ = ["PgBoxes"]


class PgBoxes(PgSession):
    """The part of :class:`~pipeline.handlers.store.PostgresEventStore` that keeps people's
    answers and guidance and the context book."""

    def give_answer(self, run_id: RunId, question_id: str, text: str) -> None:
        """Keep the answer to one question of one run; the first answer stands."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                cursor = conn.execute(
                    "INSERT INTO answers (run_id, question_id, text) VALUES (%s, %s, %s) "
                    "ON CONFLICT (run_id, question_id) DO NOTHING",
                    (run_id, question_id, nul_free(text)),
                )
                return cursor.rowcount == 1

        if not self.retrying(f"answer question {question_id!r} of run {run_id!r}", work):
            raise AnswerTakenError(f"question {question_id} of run {run_id} was answered already")

    def answer(self, run_id: RunId, question_id: str) -> str | None:
        """The answer given to one question of one run, if any."""
        row = self.retrying(
            f"read the answer to question {question_id!r} of run {run_id!r}",
            lambda conn: conn.execute(
                "SELECT text FROM answers WHERE run_id = %s AND question_id = %s",
                (run_id, question_id),
            ).fetchone(),
        )
        return None if row is None else str(row[0])

    def give_guidance(self, run_id: RunId, text: str, hat: str | None) -> int:
        """Keep a person's guidance for the run; its number."""
        # A send retried after a lost reply finds its first copy by this key.
        sent = secrets.token_hex(16)
        while True:  # a number another person took meanwhile: the next one
            number = self.retrying(
                f"keep guidance for run {run_id!r}",
                lambda conn: pg_give(conn, run_id, nul_free(text), hat, sent),
            )
            if number is not None:
                return number

    def guidance_after(self, run_id: RunId, number: int) -> list[Guidance]:
        """The run's guidance numbered after ``number``, in order."""
        read = f"read the guidance for run {run_id!r}"
        return self.retrying(read, lambda conn: pg_guidance(conn, run_id, number))

    def file_notes(self, notes: Sequence[ContextNote]) -> None:
        """Keep ``notes`` in the context book (a uid kept before is passed over)."""
        self.retrying("file notes in the context book", lambda conn: pg_file(conn, notes))

    def notes_after(self, number: int) -> list[BookNote]:
        """The context book's notes numbered after ``number``, in order."""
        read = "read the context book"
        return self.retrying(read, lambda conn: pg_notes(conn, self.label, number))
