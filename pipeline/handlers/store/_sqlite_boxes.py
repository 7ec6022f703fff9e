"""The answers, the guidance and the context book of a SQLite store (I/O): what people give
runs, and the workspace's memories and tasks, beside the event log."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from pipeline.events import ContextNote, RunId
from pipeline.handlers.store._context_sql import sqlite_file, sqlite_notes
from pipeline.handlers.store._guidance_sql import sqlite_give, sqlite_guidance
from pipeline.handlers.store._port import AnswerTakenError, BookNote, Guidance
from pipeline.handlers.store._sqlite_open import guard

__all__ = ["SqliteBoxes"]


class SqliteBoxes:
    """The part of :class:`~pipeline.handlers.store.SqliteEventStore` that keeps people's
    answers and guidance and the context book (it sets ``path`` and ``_db``)."""

    path: Path
    _db: sqlite3.Connection

    def _guard(self, action: str) -> contextlib.AbstractContextManager[None]:
        """Turn SQLite's and the disk's errors into the store's, naming the file."""
        return guard(self.path, action)

    def give_answer(self, run_id: RunId, question_id: str, text: str) -> None:
        """Keep the answer to one question of one run; the first answer stands."""
        with self._guard(f"answer question {question_id!r} of run {run_id!r}"):
            try:
                self._db.execute(
                    "INSERT INTO answers VALUES (?, ?, ?, ?)",
                    (run_id, question_id, text, datetime.now(UTC).isoformat()),
                )
            except sqlite3.IntegrityError as error:
                raise AnswerTakenError(
                    f"question {question_id} of run {run_id} was answered already"
                ) from error

    def answer(self, run_id: RunId, question_id: str) -> str | None:
        """The answer given to one question of one run, if any."""
        with self._guard(f"read the answer to question {question_id!r} of run {run_id!r}"):
            row = self._db.execute(
                "SELECT text FROM answers WHERE run_id = ? AND question_id = ?",
                (run_id, question_id),
            ).fetchone()
        return None if row is None else str(row[0])

    def give_guidance(self, run_id: RunId, text: str, hat: str | None) -> int:
        """Keep a person's guidance for the run; its number."""
        with self._guard(f"keep guidance for run {run_id!r}"):
            return sqlite_give(self._db, run_id, text, hat)

    def guidance_after(self, run_id: RunId, number: int) -> list[Guidance]:
        """The run's guidance numbered after ``number``, in order."""
        with self._guard(f"read the guidance for run {run_id!r}"):
            return sqlite_guidance(self._db, run_id, number)

    def file_notes(self, notes: Sequence[ContextNote]) -> None:
        """Keep ``notes`` in the context book (a uid kept before is passed over)."""
        with self._guard("file notes in the context book"):
            sqlite_file(self._db, notes)

    def notes_after(self, number: int) -> list[BookNote]:
        """The context book's notes numbered after ``number``, in order."""
        with self._guard("read the context book"):
            return sqlite_notes(self._db, str(self.path), number)
