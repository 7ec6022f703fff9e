"""The report's table of a run's tasks, each with its status and who added it (pure:
strings out; titles are agents' and people's words, shown literally)."""

from __future__ import annotations

from pipeline.app.cli._report_layout import markdown_table, rows_html, table_html
from pipeline.core.state import Context

__all__ = ["tasks_html", "tasks_markdown"]

_HEADS = ("task", "status", "by", "title")


def _rows(context: Context) -> list[tuple[str, str, str, str]]:
    return [(t.task_id, t.status_text, t.by, t.title) for t in context.tasks]


def tasks_html(context: Context) -> str:
    """The task table ("" when the run has no task)."""
    if not context.tasks:
        return ""
    return table_html(_HEADS, rows_html(_rows(context)), ' class="tasks"')


def tasks_markdown(context: Context) -> list[str]:
    """The task table's lines (none when the run has no task)."""
    if not context.tasks:
        return []
    return markdown_table(_HEADS, "llll", _rows(context))
