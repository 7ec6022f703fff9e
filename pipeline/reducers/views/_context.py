"""The run's memories and tasks as people read them (pure): the rows of ``ralph status``,
the live view and the reports, and the task table of a report."""

from __future__ import annotations

from typing import Final

from pipeline.core.state import Context, PipelineState, TaskStatus

__all__ = ["MAX_LISTED_TASKS", "context_rows"]

MAX_LISTED_TASKS: Final = 10
"""The most tasks the ``tasks not done`` row names (then how many more)."""


def _counts(context: Context) -> str:
    counts = dict.fromkeys(TaskStatus, 0)
    for task in context.tasks:
        counts[task.status] += 1
    return ", ".join(f"{n} {status.value}" for status, n in counts.items() if n)


def context_rows(state: PipelineState) -> list[tuple[str, str]]:
    """``tasks``, ``tasks not done`` and ``memories`` rows (none for a run that has neither)."""
    context = state.context
    rows: list[tuple[str, str]] = []
    if context.tasks:
        rows.append(("tasks", _counts(context)))
        waiting = context.open_tasks()
        listed = [f"{t.task_id} ({t.status_text}) {t.title}" for t in waiting]
        if len(listed) > MAX_LISTED_TASKS:
            listed = [*listed[:MAX_LISTED_TASKS], f"{len(listed) - MAX_LISTED_TASKS} more"]
        rows.append(("tasks not done", " · ".join(listed) or "-"))
    if context.memories:
        people = sum(1 for m in context.memories if m.by_person)
        rows.append(("memories", f"{len(context.memories)} ({people} by people)"))
    return rows
