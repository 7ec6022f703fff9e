"""The end of a run and its questions to people: the completion marker, the prompt file's
permissions given back, and waiting for an answer (I/O: files, the store)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path

from pipeline.core.effects import RestorePromptPermissions, WaitForHuman, WriteCompletionMarker
from pipeline.events import (
    CompletionMarkerEmitted,
    HumanQuestionAsked,
    HumanResponseReceived,
    HumanTimedOut,
    Instant,
    PromptPermissionsRestored,
    QuestionId,
    RunId,
    WorkspaceErrorKind,
)
from pipeline.handlers.runtime._io import Facts, facts_or_io_error
from pipeline.handlers.runtime._layout import WorkspaceLayout
from pipeline.handlers.runtime._ownfiles import PromptPathError, restore_prompt, write_own
from pipeline.handlers.store import Inbox, answer_to

__all__ = ["restore_permissions", "wait_for_answer", "write_completion_marker"]


def write_completion_marker(
    effect: WriteCompletionMarker, layout: WorkspaceLayout, clock: Callable[[], Instant]
) -> Facts:
    """Write the completion marker (status, reason, time) where tools look for it, as ralph
    writes its files under ``.agent/`` (:func:`write_own`: through no link)."""
    marker = layout.completion_marker
    at = clock()

    def write() -> Facts:
        text = f"status={effect.status}\nreason={effect.reason}\ntime={at.isoformat()}\n"
        write_own(marker, text.encode())
        path = layout.relative(marker)
        return (
            CompletionMarkerEmitted(path=path, status=effect.status, reason=effect.reason, at=at),
        )

    # ValueError: what is there is a link or no regular file (UnsafeFileError).
    where, catching = str(marker), (OSError, ValueError)
    return facts_or_io_error(write, WorkspaceErrorKind.WRITE, where, lambda: at, catching=catching)


def wait_for_answer(
    effect: WaitForHuman,
    run_id: RunId,
    answers: Inbox | None,
    clock: Callable[[], Instant],
    sleep: Callable[[float], None],
) -> Facts:
    """Give a new question its id, or poll the store for the answer to the question asked
    until the deadline.

    The id is random (an agent cannot guess it) and the answer is read from the store only
    (``ralph respond`` keeps it there for this run and this question): nothing an agent
    writes into the work tree can answer.
    """
    if effect.question_id is None:
        question_id = QuestionId(secrets.token_hex(16))
        return (
            HumanQuestionAsked(
                question_id=question_id,
                question=effect.question,
                deadline=effect.deadline,
                at=clock(),
            ),
        )
    while True:
        text = None if answers is None else answer_to(answers, run_id, effect.question_id)
        if text is not None:
            return (HumanResponseReceived(question_id=effect.question_id, text=text, at=clock()),)
        now = clock()
        if now >= effect.deadline:
            return (HumanTimedOut(question_id=effect.question_id, at=now),)
        sleep(min(1.0, (effect.deadline - now).total_seconds()))


def restore_permissions(
    effect: RestorePromptPermissions, layout: WorkspaceLayout, clock: Callable[[], Instant]
) -> Facts:
    """Give the prompt file the mode it had before the run protected it."""
    path, mode = effect.path, effect.mode
    if path is None or mode is None:
        return (PromptPermissionsRestored(path="", at=clock()),)

    def restore() -> Facts:
        try:
            restore_prompt(layout.root, Path(path), mode)
        except FileNotFoundError:
            pass  # The user removed the file: nothing is left to give permissions back to.
        except PromptPathError:
            # Replaced by a link, a directory, ...: what is there is not ralph's to change.
            return (PromptPermissionsRestored(path="", at=clock()),)
        return (PromptPermissionsRestored(path=path, at=clock()),)

    return facts_or_io_error(restore, WorkspaceErrorKind.PERMISSION, path, clock)
