"""Answering the question a run waits on: ``ralph respond`` and its Python API (I/O).

The answer is kept in the run's event store for one question of one run; the waiting run polls
the store and records it as a ``HumanResponseReceived`` fact. Nothing is read from a file an
agent can write, and the question's id is random, so an agent cannot answer blindly.
"""

from __future__ import annotations

from pathlib import Path

from pipeline import PipelineError
from pipeline.core.state import PendingQuestion
from pipeline.engine._durable import load_state
from pipeline.engine._stores import existing_store, storable
from pipeline.events import RunId
from pipeline.handlers.store import AnswerTakenError, give_answer, open_store_at

__all__ = ["AnswerError", "respond"]


class AnswerError(PipelineError, ValueError):
    """The answer cannot be given (no question waits, another one does, or it was answered)."""


def respond(
    root: Path,
    text: str,
    question_id: str | None,
    run_id: str | None = None,
    store: str | None = None,
) -> tuple[RunId, PendingQuestion]:
    """Answer question ``question_id``, which run ``run_id`` (default: the latest) waits on,
    with ``text``; returns the run and the question answered. ``question_id`` None answers
    nothing: the error names the question the run waits on, to be answered by its id (an
    answer given blind could reach a question asked since the person last looked).

    ``store`` names the event store (a path or URL; default: the workspace's
    default store). The run's state is folded from its store (the question, its id
    and its deadline are in the log). Raises :class:`AnswerError` when the run waits on no
    question, on another one, or the question holds an answer already, and
    :class:`~pipeline.handlers.store.UnknownRunError` for a run the store does not hold.
    """
    if not text.strip():
        raise AnswerError("the answer is empty")
    storable(text, "the answer", AnswerError)
    location = existing_store(root, store, AnswerError)
    with open_store_at(location, must_exist=True) as opened:
        chosen = opened.choose_run(run_id)
        state, _ = load_state(opened, chosen)
        question = state.ledger.pending_question
        if question is None:
            raise AnswerError(f"run {chosen} is not waiting for an answer")
        if not question.asked:
            raise AnswerError(f"run {chosen} has not asked its question yet; try again in a moment")
        if question_id is None:
            raise AnswerError(
                f"say which question you answer: run {chosen} waits on {question.question_id} "
                f"({question.question!r}); answer it with --question {question.question_id}"
            )
        if question.question_id != question_id:
            raise AnswerError(
                f"run {chosen} is not waiting on question {question_id!r}: it waits on "
                f"{question.question_id} ({question.question!r}); answer that one with "
                f"--question {question.question_id}"
            )
        try:
            give_answer(opened, chosen, question.question_id, text)
        except AnswerTakenError as error:
            raise AnswerError(str(error)) from error
    return chosen, question
