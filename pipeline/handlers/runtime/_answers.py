"""Leaving a person's answer where a run waiting on its question will find it (I/O).

The waiting handler polls ``.ralph/answers/<question id>``; the answer is written to a temporary
file and renamed into place, so the handler never reads half an answer.
"""

from __future__ import annotations

import os
import tempfile

from pipeline.errors import PipelineError
from pipeline.handlers.runtime._layout import WorkspaceLayout

__all__ = ["AnswerError", "write_answer"]


class AnswerError(PipelineError, ValueError):
    """The answer cannot be given (no question waits, or it was answered already)."""


def write_answer(layout: WorkspaceLayout, question_id: str, text: str) -> None:
    """Leave ``text`` as the answer to ``question_id``; an earlier answer is never replaced."""
    if not text.strip():
        raise AnswerError("the answer is empty")
    target = layout.answer(question_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".answer-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        # link() fails when the target exists: two people answering at once, one wins.
        os.link(temporary, target)
    except FileExistsError as error:
        raise AnswerError(f"question {question_id} was answered already ({target})") from error
    finally:
        os.unlink(temporary)
