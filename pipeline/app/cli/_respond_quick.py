"""``ralph respond`` on the workspace's SQLite store, kept lean: the question the run waits
on comes from the store's ``run_status`` projection (its ``question`` part, written with the
events), and the answer goes into the store's inbox as the full command posts it, without
typer, the events, the converter or a fold of the log.

It answers only the plain shapes (``ralph respond TEXT --question ID [--run RUN]``) on the
workspace's own store (a ``ralph.toml`` with no ``[store]``, no ``RALPH_STORE``), at the
schema this release writes, for a run whose question is known as of its head and which began
with the ``ralph.toml`` there now (the full command parses it first, and refuses one it
cannot take; the run's start parsed that one). Anything else
returns None and the full command runs, as before. Refusals (no question waits, another
does, it was answered with other words) are said as the full command says them, exit 2.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import orjson

from pipeline.app.cli._lean_store import SCHEMA_READ, snapshot
from pipeline.app.cli._plain import PLAIN_SHAPES, arguments
from pipeline.app.cli._status_quick import run_parts

__all__ = ["main"]

_USAGE_ERROR = 2  # as pipeline.app.cli._app.USAGE_ERROR (a test holds the two equal)


def _store(root: Path) -> tuple[Path, str | None] | None:
    """The workspace's default store and the digest of its ``ralph.toml`` (None: it has
    none), or None when the file may name another store (or cannot be read as TOML: the
    full command says what is wrong with it)."""
    from pipeline.handlers.runtime._layout import WorkspaceLayout

    layout = WorkspaceLayout(root=root.resolve())
    if not layout.config.is_file():
        return layout.store, None
    import tomllib

    try:
        text = layout.config.read_bytes()
        config = tomllib.loads(text.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    return None if "store" in config else (layout.store, hashlib.sha256(text).hexdigest())


def _started_with(db: sqlite3.Connection, run_id: str) -> str | None:
    """The digest of the ``ralph.toml`` run ``run_id`` started with, as its first event
    records it (None: not found)."""
    first = db.execute(
        "SELECT type, body FROM events WHERE run_id = ? AND sequence = 0", (run_id,)
    ).fetchone()
    if first is None or first[0] != "lifecycle.run_started":
        return None
    digest = orjson.loads(first[1]).get("config_digest")
    return digest if isinstance(digest, str) else None


def _refusal(run_id: str, question_id: str, waits: str) -> str | None:
    """Why ``question_id`` of ``run_id`` cannot be answered, as ``pipeline.engine.respond``
    says it, given the run's ``question`` part; None when it can."""
    if not waits:
        return f"run {run_id} is not waiting for an answer"
    waiting, asked, question = orjson.loads(waits)
    if not asked:
        return f"run {run_id} has not asked its question yet; try again in a moment"
    if waiting != question_id:
        return (
            f"run {run_id} is not waiting on question {question_id!r}: it waits on "
            f"{waiting} ({question!r}); answer that one with --question {waiting}"
        )
    return None


def _post(path: Path, run_id: str, question_id: str, text: str) -> str | None:
    """Keep ``text`` as the answer to the question in the store's inbox as the store's
    ``give_answer`` keeps it (numbered after the run's last answer, keyed by the question),
    or return why not (another answer is kept); raises ``sqlite3.Error``."""
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA busy_timeout=10000")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("BEGIN IMMEDIATE")
        with db:  # committed, or rolled back on any error
            kept = db.execute(
                "SELECT text FROM inbox WHERE address = ? AND kind = 'answer' AND key = ?",
                (run_id, question_id),
            ).fetchone()
            if kept is not None:
                if kept[0] == text:
                    return None  # the same answer again is the same answer
                return f"question {question_id} of run {run_id} was answered already"
            ((last,),) = db.execute(
                "SELECT COALESCE(MAX(number), 0) FROM inbox WHERE address = ? AND kind = 'answer'",
                (run_id,),
            ).fetchall()
            db.execute(
                "INSERT INTO inbox (kind, address, number, key, subject, text, posted_at) "
                "VALUES ('answer', ?, ?, ?, NULL, ?, ?)",
                (run_id, int(last) + 1, question_id, text, datetime.now(UTC).isoformat()),
            )
    finally:
        db.close()
    return None


def _storable(text: str) -> bool:
    """Whether ``text`` is text SQLite can keep: an argument that is not UTF-8 reaches
    Python as lone surrogates, which encode to nothing."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def main(argv: list[str]) -> int | None:
    """Answer the question ``ralph respond ARGV`` names and return the exit status, or
    return None (having done nothing) when the full command must answer."""
    given = arguments(PLAIN_SHAPES["respond"], argv)
    if given is None or "RALPH_STORE" in os.environ:
        return None
    text, question_id, asked = given.get("text"), given.get("question_id"), given.get("run")
    if not isinstance(text, str) or not isinstance(question_id, str):
        return None  # a required argument is missing: typer says so
    if not text.strip() or "\x00" in text:
        return None  # refused before the store is read: the full command says why
    if not _storable(text):
        return None  # bytes no text: the full command's to say what it does with them
    located = _store(Path())
    if located is None or not located[0].is_file():
        return None
    path, config = located
    read = run_parts(path, asked if isinstance(asked, str) else None)
    if read is None:
        return None
    run_id, head, found, _facts = read
    # The full command parses ralph.toml first and refuses one it cannot take: a file the
    # run did not start with (edited since, or another) is left to it.
    if config is not None and config != snapshot(
        path, SCHEMA_READ, lambda db: _started_with(db, run_id)
    ):
        return None
    waits = next((text for part, at, text in found if part == "question" and at == head), None)
    if waits is None:
        return None  # not known as of the head: the full command folds the log
    refused = _refusal(run_id, question_id, waits)
    if refused is None:
        try:
            refused = _post(path, run_id, question_id, text)
        except sqlite3.Error:
            return None  # the full command names what is wrong with the store
    if refused is not None:
        from pipeline.app.cli._console import error_console, usage_error

        usage_error(error_console(), refused)
        return _USAGE_ERROR
    from pipeline.app.cli._console import output_console
    from pipeline.app.cli._safe import terminal_safe

    question = orjson.loads(waits)[2]
    said = f"Answered {question_id} of run {run_id}: {terminal_safe(question)}"
    output_console().print(said, markup=False)
    return 0
