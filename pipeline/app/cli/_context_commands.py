"""``ralph memory`` and ``ralph task`` as people run them: notes written straight into the
workspace's context book, and the book listed. (An agent's call, with ``RALPH_EVENTS_FILE``
set, never reaches here: ``pipeline.app.cli._note`` writes it to its run's events file.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import (
    StoreOption,
    WorkspaceOption,
    _configured_store,
    _said_failures,
    app,
    out,
)
from pipeline.app.cli._console import text_table
from pipeline.app.cli._safe import terminal_safe
from pipeline.core.state import Context
from pipeline.engine import read_context, write_note
from pipeline.events import ContextNote, NoteKind

__all__ = ["memory_app", "task_app"]

memory_app = typer.Typer(
    help="The workspace's memories: what every later prompt and run should know.",
    no_args_is_help=True,
)
task_app = typer.Typer(
    help="The workspace's tasks: work tracked across iterations and runs.",
    no_args_is_help=True,
)
app.add_typer(memory_app, name="memory")
app.add_typer(task_app, name="task")

IdArgument = Annotated[str, typer.Argument(help="The id, as `list` shows it.")]
JsonOption = Annotated[bool, typer.Option("--json", help="One JSON object per line.")]


def _write(
    workspace: Path,
    store: str | None,
    kind: NoteKind,
    subject: str | None,
    text: str = "",
    tags: tuple[str, ...] = (),
) -> ContextNote:
    with _said_failures():
        return write_note(workspace, kind, subject, text, tags, _configured_store(workspace, store))


def _read(workspace: Path, store: str | None) -> Context:
    with _said_failures():
        return read_context(workspace, _configured_store(workspace, store))


def _said(message: str) -> None:
    out.print(terminal_safe(message), markup=False)


@memory_app.command("add")
def memory_add(
    text: Annotated[str, typer.Argument(help="What to remember, in a sentence or two.")],
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="Only for this hat or role (repeat for more; none: every hat)."),
    ] = None,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Keep TEXT: every later prompt of the hats it is for carries it, within the budget."""
    note = _write(workspace, store, NoteKind.MEMORY_ADDED, None, text, tuple(tag or ()))
    _said(f"Memory {note.subject} kept.")


@memory_app.command("remove")
def memory_remove(
    memory_id: IdArgument, workspace: WorkspaceOption = Path(), store: StoreOption = None
) -> None:
    """Forget a memory."""
    _write(workspace, store, NoteKind.MEMORY_REMOVED, memory_id)
    _said(f"Memory {memory_id} removed.")


def _by(by: str, run: str | None) -> str:
    """Who wrote a memory or task, with its run for an agent's."""
    return by if run is None else f"{by} (run {run})"


@memory_app.command("list")
def memory_list(
    workspace: WorkspaceOption = Path(), store: StoreOption = None, as_json: JsonOption = False
) -> None:
    """Every memory, oldest first: its id, its hats, who wrote it and what it says."""
    memories = _read(workspace, store).memories
    if as_json:
        for m in memories:
            row = {"id": m.memory_id, "text": m.text, "tags": list(m.tags), "by": m.by}
            when = {"run": m.run, "written_at": m.written_at.isoformat()}
            sys.stdout.write(json.dumps(row | when) + "\n")
        return
    if not memories:
        _said("No memories.")
        return
    rows = [
        (m.memory_id, ", ".join(m.tags) or "every hat", _by(m.by, m.run), m.text) for m in memories
    ]
    out.print(text_table(("id", "for", "by", "memory"), rows))


@task_app.command("add")
def task_add(
    title: Annotated[str, typer.Argument(help="The task, in a line.")],
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Add a task; runs list it in every working prompt until it is done."""
    note = _write(workspace, store, NoteKind.TASK_ADDED, None, title)
    _said(f"Task {note.subject} added.")


@task_app.command("start")
def task_start(
    task_id: IdArgument, workspace: WorkspaceOption = Path(), store: StoreOption = None
) -> None:
    """Mark a task started."""
    _write(workspace, store, NoteKind.TASK_STARTED, task_id)
    _said(f"Task {task_id} started.")


@task_app.command("done")
def task_done(
    task_id: IdArgument, workspace: WorkspaceOption = Path(), store: StoreOption = None
) -> None:
    """Mark a task done."""
    _write(workspace, store, NoteKind.TASK_DONE, task_id)
    _said(f"Task {task_id} done.")


@task_app.command("block")
def task_block(
    task_id: IdArgument,
    reason: Annotated[str, typer.Option("--reason", help="Why it is blocked.")] = "",
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
) -> None:
    """Mark a task blocked, saying why."""
    _write(workspace, store, NoteKind.TASK_BLOCKED, task_id, reason)
    _said(f"Task {task_id} blocked.")


@task_app.command("list")
def task_list(
    all_tasks: Annotated[bool, typer.Option("--all", help="Done tasks too.")] = False,
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
    as_json: JsonOption = False,
) -> None:
    """The tasks not done (with --all, every task), oldest first."""
    context = _read(workspace, store)
    tasks = context.tasks if all_tasks else context.open_tasks()
    if as_json:
        for t in tasks:
            row = {"id": t.task_id, "title": t.title, "status": t.status.value, "by": t.by}
            sys.stdout.write(json.dumps(row | {"run": t.run, "reason": t.reason}) + "\n")
        return
    if not tasks:
        _said("No tasks." if all_tasks else "No tasks left to do.")
        return
    rows = [(t.task_id, t.status_text, _by(t.by, t.run), t.title) for t in tasks]
    out.print(text_table(("id", "status", "by", "task"), rows))
