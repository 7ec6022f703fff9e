"""A person's memories and tasks: ``ralph memory`` and ``ralph task`` without an agent's
events file, and their Python API (I/O: the store and the clock).

A person's note goes straight into the workspace's context book, once checked against the
book as it stands (the same fold a run makes of it). Runs going on take it in before their
next prompt; later runs take in the whole book. An agent's notes reach the book through its
run (:mod:`pipeline.reducers.context`), so the book holds them only once the run has filed
them: before its next prompt, and when it stops.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from pipeline import PipelineError
from pipeline.core._note_rules import new_id
from pipeline.core.state import PERSON, Context
from pipeline.engine._durable import utc_now
from pipeline.engine._stores import storable
from pipeline.events import ContextNote, Instant, NoteKind
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import file_notes, notes_after, open_store_at, store_path
from pipeline.reducers.context import applied, fold_notes

__all__ = ["ContextError", "read_context", "write_note"]


class ContextError(PipelineError, ValueError):
    """A memory or task note cannot be written (the message says why); nothing was."""


def _location(root: Path, store: str | None) -> str:
    return str(WorkspaceLayout(root=root.resolve()).store) if store is None else store


def read_context(root: Path, store: str | None = None) -> Context:
    """The memories and tasks of workspace ``root``'s book in ``store`` (default: the
    workspace's own); none when the workspace has no store yet."""
    location = _location(root, store)
    path = store_path(location)
    if path is not None and not path.is_file():
        return Context()
    with open_store_at(location, must_exist=True, read_only=True) as opened:
        return fold_notes(note for _, note in notes_after(opened, 0, opened.label))


def write_note(
    root: Path,
    kind: NoteKind,
    subject: str | None,
    text: str = "",
    tags: tuple[str, ...] = (),
    store: str | None = None,
    clock: Callable[[], Instant] = utc_now,
) -> ContextNote:
    """Write a person's note of ``kind`` about memory or task ``subject`` (None: a new id,
    for an added one) into the book; the note as written. Raises :class:`ContextError`, with
    nothing written, when it cannot apply to the book as it stands."""
    storable(text, "the note", ContextError)
    if subject is None:
        subject = new_id("m" if kind is NoteKind.MEMORY_ADDED else "t", text)
    note = ContextNote(
        uid=f"person:{secrets.token_hex(8)}",
        kind=kind,
        subject=subject,
        text=text.strip(),
        tags=tags,
        by=PERSON,
        written_at=clock(),
    )
    location = _location(root, store)
    path = store_path(location)
    if path is not None and not path.parent.is_dir():
        if not (root / ".git").exists():
            raise ContextError(f"{root.resolve()} is not the top of a git repository")
        path.parent.mkdir(parents=True, exist_ok=True)  # the store of a workspace yet to run
    with open_store_at(location) as opened:
        book = fold_notes(note for _, note in notes_after(opened, 0, opened.label))
        result = applied(book, note)
        if isinstance(result, str):
            raise ContextError(result)
        file_notes(opened, [note])
    return note
