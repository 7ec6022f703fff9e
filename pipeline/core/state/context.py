"""A run's memories and tasks (pure data, folded from the context book's notes the run took
in and the notes its agents published), and the bounds that keep them small."""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import frozen

from pipeline.core._note_rules import MAX_MEMORY_CHARS, MAX_TAG_CHARS, MAX_TAGS, MAX_TITLE_CHARS
from pipeline.events.notes import ContextNote
from pipeline.events.values import Instant, RunId

__all__ = [
    "MAX_MEMORIES",
    "MAX_MEMORY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "MAX_TASKS",
    "MAX_TITLE_CHARS",
    "PERSON",
    "Context",
    "Memory",
    "Task",
    "TaskStatus",
]

MAX_MEMORIES: Final = 500
"""The most memories a workspace keeps of each side, people's and agents', counted apart: a
person's past it is refused; an agent's past it drops the oldest agent's memory."""
PERSON: Final = "person"
"""Who a person's note is by (an agent's is by its hat or role)."""

MAX_TASKS: Final = 500
"""The most tasks a workspace keeps of each side, people's and agents', counted apart: a new
one past it drops its side's oldest done one (none done: it is refused)."""


@final
@frozen(kw_only=True)
class Memory:
    """Something worth knowing in every later prompt: ``text``, for the hats ``tags`` name
    (none: every hat), written by ``by`` (:data:`PERSON`, or an agent's hat or role) in run
    ``run`` (None: a person's, or an agent's kept before runs were recorded)."""

    memory_id: str
    text: str
    tags: tuple[str, ...]
    by: str
    written_at: Instant
    run: RunId | None = None

    @property
    def by_person(self) -> bool:
        """Whether a person wrote it (then only a person removes it)."""
        return self.by == PERSON


@enum.unique
class TaskStatus(enum.StrEnum):
    """Where a task stands."""

    OPEN = "open"
    STARTED = "started"
    BLOCKED = "blocked"
    DONE = "done"


@final
@frozen(kw_only=True)
class Task:
    """A piece of work tracked across iterations and runs; ``reason`` says why it is blocked.
    ``by`` and ``run`` say who added it, as for a :class:`Memory`."""

    task_id: str
    title: str
    status: TaskStatus
    by: str
    reason: str = ""
    run: RunId | None = None

    @property
    def by_person(self) -> bool:
        """Whether a person added it (then only a person marks it done or blocked)."""
        return self.by == PERSON

    @property
    def status_text(self) -> str:
        """``open``, ``started``, ``done``, or ``blocked: why``, as people and agents read it."""
        if self.status is TaskStatus.BLOCKED and self.reason:
            return f"blocked: {self.reason}"
        return self.status.value


@final
@frozen(kw_only=True)
class Context:
    """The memories and tasks as the run knows them, oldest first.

    ``seen`` is the number of the last book note taken in; ``unfiled`` holds the notes the
    run's agents published that the book does not have yet (filed before the next prompt,
    and taken off once the book gives them back).
    """

    memories: tuple[Memory, ...] = ()
    tasks: tuple[Task, ...] = ()
    seen: int = 0
    unfiled: tuple[ContextNote, ...] = ()

    def open_tasks(self) -> tuple[Task, ...]:
        """The tasks not done yet."""
        return tuple(task for task in self.tasks if task.status is not TaskStatus.DONE)
