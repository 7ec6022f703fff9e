"""Answering the question a run waits on: ``ralph respond`` and its Python API (I/O)."""

from __future__ import annotations

from pathlib import Path

from pipeline.engine._durable import load_state
from pipeline.events import RunId
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.runtime._answers import AnswerError, write_answer
from pipeline.handlers.store import SqliteEventStore
from pipeline.state import PendingQuestion

__all__ = ["AnswerError", "respond"]


def respond(root: Path, text: str, run_id: str | None = None) -> tuple[RunId, PendingQuestion]:
    """Answer the question run ``run_id`` (default: the latest) of the workspace at ``root``
    is waiting on; returns the run and the question answered.

    The run's state is folded from its store (the question and its deadline are in the log),
    and the answer is left where the waiting handler polls for it; the handler records it as
    a ``HumanResponseReceived`` fact. Raises :class:`AnswerError` when no question waits, and
    :class:`~pipeline.handlers.store.UnknownRunError` for a run the store does not hold.
    """
    layout = WorkspaceLayout(root.resolve())
    if not layout.store.is_file():
        raise AnswerError(f"no runs in {layout.root} (no {layout.store})")
    with SqliteEventStore(layout.store) as store:
        chosen = store.choose_run(run_id)
        state, _ = load_state(store, chosen)
    question = state.ledger.pending_question
    if question is None:
        raise AnswerError(f"run {chosen} is not waiting for an answer")
    write_answer(layout, question.question_id, text)
    return chosen, question
