"""``ralph doctor``: what a run needs, checked before it starts, with the fixes named."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from pipeline.app.cli._app import (
    StoreOption,
    WorkspaceOption,
    _fail,
    app,
    out,
)
from pipeline.app.workspace import (
    Status,
    diagnose,
    would_fail,
)
from pipeline.core.serialization import CONVERTER

_STATUS_STYLE = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "bold red"}


@app.command()
def doctor(
    workspace: WorkspaceOption = Path(),
    store: StoreOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Check what a run in the workspace needs: git, ralph.toml, the prompt, the validate and
    gate programs, .ralph/, the store, and each agent CLI (on PATH, --version, known
    pitfalls). Exit 1 when a run would fail."""
    if not workspace.is_dir():
        raise _fail(f"{workspace} is not a directory")
    checks = diagnose(workspace, os.environ, store=store, is_root=os.geteuid() == 0)
    failing = would_fail(checks)
    if as_json:
        document = {
            "ok": not failing,
            "workspace": str(workspace.resolve()),
            "checks": CONVERTER.unstructure(checks),
        }
        sys.stdout.write(orjson.dumps(document).decode() + "\n")
    else:
        table = Table(title=Text(f"ralph doctor: {workspace.resolve()}"))
        for column in ("check", "status", "found", "fix"):
            table.add_column(column, overflow="fold")  # a path or fix is never cut short
        for check in checks:
            status = f"[{_STATUS_STYLE[check.status]}]{check.status.value}[/]"
            table.add_row(escape(check.name), status, escape(check.detail), escape(check.fix))
        out.print(table)
        verdict = "a run would fail: fix the FAIL rows" if failing else "ready to run"
        out.print(verdict, markup=False)
    raise typer.Exit(1 if failing else 0)
