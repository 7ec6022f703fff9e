"""The report's table of a run's tasks, each with its status and who added it (pure:
strings out; titles are agents' and people's words, shown literally)."""

from __future__ import annotations

from html import escape

from pipeline.app.cli._safe import markdown_text
from pipeline.core.state import Context

__all__ = ["tasks_html", "tasks_markdown"]


def _rows(context: Context) -> list[tuple[str, str, str, str]]:
    return [(t.task_id, t.status_text, t.by, t.title) for t in context.tasks]


def tasks_html(context: Context) -> str:
    """The task table ("" when the run has no task)."""
    if not context.tasks:
        return ""
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>"
        for row in _rows(context)
    )
    return (
        '<table class="tasks"><thead><tr><th>task</th><th>status</th><th>by</th>'
        f"<th>title</th></tr></thead><tbody>{body}</tbody></table>"
    )


def tasks_markdown(context: Context) -> list[str]:
    """The task table's lines (none when the run has no task)."""
    if not context.tasks:
        return []
    lines = ["", "| task | status | by | title |", "| --- | --- | --- | --- |"]
    lines += ["| " + " | ".join(markdown_text(c) for c in row) + " |" for row in _rows(context)]
    return lines
