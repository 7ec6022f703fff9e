"""The values of the workspace's memories and tasks (pure data): the notes of its context
book, the topics an agent's ``ralph memory`` and ``ralph task`` calls publish, and the policy
a run records for them. The fact that carries a note into a run is in :mod:`.context`.
"""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import field, frozen

from pipeline.events.values import COUNT_VALIDATOR, INSTANT_VALIDATOR, Count, Instant

__all__ = ["CONTEXT_TOPICS", "ContextNote", "ContextPolicy", "NoteKind"]


class NoteKind(enum.StrEnum):
    """What a note of the context book does."""

    MEMORY_ADDED = "memory_added"
    MEMORY_REMOVED = "memory_removed"
    TASK_ADDED = "task_added"
    TASK_STARTED = "task_started"
    TASK_DONE = "task_done"
    TASK_BLOCKED = "task_blocked"


CONTEXT_TOPICS: Final = {
    "ralph.memory.add": NoteKind.MEMORY_ADDED,
    "ralph.memory.remove": NoteKind.MEMORY_REMOVED,
    "ralph.task.add": NoteKind.TASK_ADDED,
    "ralph.task.start": NoteKind.TASK_STARTED,
    "ralph.task.done": NoteKind.TASK_DONE,
    "ralph.task.block": NoteKind.TASK_BLOCKED,
}
"""The topics an agent's ``ralph memory`` and ``ralph task`` calls publish, and the note
each makes. Every hat may publish them; they wake no hat."""


@final
@frozen(kw_only=True)
class ContextPolicy:
    """How a run uses the workspace's memories and tasks (``[context]``): at most
    ``memory_chars`` characters of memories in a prompt, and with ``finish_tasks`` the
    completion promise refused while a task is not done."""

    memory_chars: Count = field(default=Count(4000), validator=COUNT_VALIDATOR)
    finish_tasks: bool = False


@final
@frozen(kw_only=True)
class ContextNote:
    """One note of a workspace's context book, as written.

    ``uid`` names the note in its book: filing a note whose uid is there already writes
    nothing. ``subject`` is the memory's or the task's id; ``text`` is the memory, the
    task's title or why it is blocked (empty for the other kinds); ``tags`` say which hats
    a memory is for (none: every hat). ``by`` is who wrote it: ``person``, or the hat or
    role of the agent.
    """

    uid: str
    kind: NoteKind
    subject: str
    text: str
    tags: tuple[str, ...]
    by: str
    written_at: Instant = field(validator=INSTANT_VALIDATOR)
