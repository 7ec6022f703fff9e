"""``ralph worktrees``: the worktrees ``ralph run --worktree`` and ``ralph fork`` made, with
their runs; what a branch changed; and removing what was merged."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import WorkspaceOption, _fail, _said_failures, app, err, out
from pipeline.app.cli._console import text_table
from pipeline.app.cli._safe import terminal_safe
from pipeline.app.workspace import (
    WorktreeError,
    find_worktree,
    remove_worktree,
    run_worktrees,
    worktree_diff,
)

worktrees_app = typer.Typer(
    help="The worktrees runs work in (ralph run --worktree) and forks: list them with their "
    "runs, show what a branch changed, remove what was merged.",
    no_args_is_help=True,
)
app.add_typer(worktrees_app, name="worktrees")

NameArgument = Annotated[
    str, typer.Argument(help="The worktree: its name, its branch or its folder.")
]


@worktrees_app.command("list")
def list_command(
    workspace: WorkspaceOption = Path(),
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """Every worktree of ralph's of the workspace: its branch, its latest run and how it
    stands, the commits it has that the workspace's HEAD lacks, and whether a run is at work
    in it."""
    with _said_failures():
        found = run_worktrees(workspace)
    if as_json:
        for w in found:
            row = {
                "name": w.name,
                "path": str(w.path),
                "branch": w.branch,
                "head": w.head,
                "ahead": w.ahead,
                "merged": w.merged,
                "run": w.run,
                "phase": w.phase,
                "landing": w.landing,
                "busy": w.busy,
            }
            sys.stdout.write(json.dumps(row) + "\n")
        return
    if not found:
        out.print("No worktrees of ralph's here (ralph run --worktree makes one).")
        return
    rows = []
    for w in found:
        merged, busy = ("yes" if w.merged else "no"), ("yes" if w.busy else "no")
        rows.append((
            w.name, w.branch, w.run or "-", w.phase or "-", str(w.ahead), merged,
            w.landing or "-", busy, str(w.path),
        ))  # fmt: skip
    columns = ("name", "branch", "run", "phase", "ahead", "merged", "landing", "at work", "folder")
    # Folded, never cut: a name or a folder cut short names nothing.
    out.print(text_table(columns, rows, fold=True))


@worktrees_app.command("diff")
def diff_command(name: NameArgument, workspace: WorkspaceOption = Path()) -> None:
    """What the worktree's branch changed since it left the workspace's HEAD (what a merge
    would bring), as git shows it; an agent's control characters are shown, not sent."""
    with _said_failures():
        shown = worktree_diff(workspace, find_worktree(workspace, name))
    sys.stdout.write(terminal_safe(shown, newlines=True))


@worktrees_app.command("clean")
def clean_command(
    name: Annotated[
        str | None,
        typer.Argument(help="The worktree to remove (default: every merged one no run holds)."),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force", help="Remove it although its branch has commits HEAD lacks (they are lost)."
        ),
    ] = False,
    workspace: WorkspaceOption = Path(),
) -> None:
    """Remove a worktree and its branch once HEAD holds its commits and its run has ended;
    never one a run is at work in. Without a name, every such worktree."""
    if name is None and force:
        raise _fail("--force removes one worktree, named: give its name")
    with _said_failures():
        chosen = [find_worktree(workspace, name)] if name else run_worktrees(workspace)
    gone, failed = 0, []
    for worktree in chosen:
        if name is None and not worktree.removable:
            continue
        try:
            remove_worktree(workspace, worktree, force=force)
        except WorktreeError as error:
            failed.append(str(error))  # the others are still removed
            continue
        gone += 1
        shown = terminal_safe(f"Removed {worktree.path} and {worktree.branch}")
        err.print(shown, markup=False)
    if failed:
        raise _fail("; ".join(failed))
    if not gone:
        err.print(
            "Nothing to remove: no worktree is merged, with its run ended and no run at work.",
            markup=False,
        )
