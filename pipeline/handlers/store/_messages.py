"""The inbox's three kinds of message as their callers use them (I/O through the port): a
person's answer to a run's question, a person's guidance to a run, and the notes of the
workspace's context book."""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import orjson
from cattrs.errors import BaseValidationError

from pipeline.core.serialization import CONVERTER
from pipeline.events import ContextNote, RunId
from pipeline.handlers.store._port import (
    AnswerTakenError,
    Inbox,
    Letter,
    Message,
    MessageKind,
    StoreCorruptError,
)

__all__ = ["answer_to", "file_notes", "give_answer", "give_guidance", "notes_after"]


def give_answer(inbox: Inbox, run_id: RunId, question_id: str, text: str) -> None:
    """Keep ``text`` as the answer to question ``question_id`` of run ``run_id`` until the
    waiting run records it; :class:`AnswerTakenError` (nothing written) when the question
    holds another answer already (the same answer again is the same answer)."""
    letter = Letter(kind=MessageKind.ANSWER, to=run_id, text=text, key=question_id)
    (kept,) = inbox.post([letter])
    if kept.text != text:
        raise AnswerTakenError(f"question {question_id} of run {run_id} was answered already")


def answer_to(inbox: Inbox, run_id: RunId, question_id: str) -> str | None:
    """The answer given to question ``question_id`` of run ``run_id`` (None: none yet)."""
    for message in inbox.inbox(MessageKind.ANSWER, run_id):
        if message.key == question_id:
            return message.text
    return None


def give_guidance(inbox: Inbox, run_id: RunId, text: str, hat: str | None) -> int:
    """Keep ``text`` for run ``run_id``'s hat ``hat`` (None: whichever works next); its
    number. The key is drawn here, so a store that posts again after a lost reply keeps it
    once."""
    letter = Letter(
        kind=MessageKind.GUIDANCE, to=run_id, text=text, key=secrets.token_hex(16), subject=hat
    )
    (kept,) = inbox.post([letter])
    return kept.number


def file_notes(inbox: Inbox, notes: Sequence[ContextNote]) -> None:
    """Keep ``notes`` in the context book, numbered in order after the last; a note whose
    uid the book has already is passed over, so filing again after a crash is safe."""
    if notes:
        inbox.post(
            [
                Letter(
                    kind=MessageKind.NOTE,
                    to=None,
                    text=orjson.dumps(CONVERTER.unstructure(note)).decode(),
                    key=note.uid,
                )
                for note in notes
            ]
        )


def notes_after(
    inbox: Inbox, number: int, label: str = "the store"
) -> list[tuple[int, ContextNote]]:
    """The context book's notes numbered after ``number``, in order, with their numbers;
    :class:`StoreCorruptError` names a damaged one (``label``: the store, for messages)."""
    return [(m.number, _note(label, m)) for m in inbox.inbox(MessageKind.NOTE, None, number)]


def _note(label: str, message: Message) -> ContextNote:
    try:
        return CONVERTER.structure(orjson.loads(message.text), ContextNote)
    except (orjson.JSONDecodeError, BaseValidationError, ValueError, TypeError) as error:
        raise StoreCorruptError(
            f"{label}: note {message.number} of the context book is damaged: {error}"
        ) from error
