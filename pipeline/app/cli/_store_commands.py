"""``ralph salvage``, ``runs`` and ``projections rebuild``: the commands about a whole store."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import (
    STORE_ERROR,
    DamagedStoreOption,
    StoreArgument,
    WorkspaceOption,
    _configured_store,
    _existing_store,
    _fail,
    _print,
    _reconciled,
    _stop,
    _warn,
    app,
    out,
)
from pipeline.app.cli._console import text_table
from pipeline.app.cli._queue import queue_tickets, runs_rows
from pipeline.app.cli._safe import message_safe
from pipeline.app.workspace import (
    Reconciliation,
)
from pipeline.core.state import Phase
from pipeline.engine import (
    NothingToSalvageError,
    RunPresentError,
    Salvaged,
    load_state,
    salvage,
    utc_now,
)
from pipeline.events import (
    RunId,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import (
    NamedStore,
    SequenceConflictError,
    StoreError,
    open_store_at,
    store_path,
)
from pipeline.reducers.views import cost_text


@app.command(name="salvage")
def salvage_command(
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="The store to copy the run into: a path (created when missing), "
            "sqlite:///PATH or postgresql://...; it must not hold the run yet.",
        ),
    ],
    run_id: Annotated[
        str | None,
        typer.Argument(metavar="RUN", help="The damaged run (default: the latest)."),
    ] = None,
    workspace: WorkspaceOption = Path(),
    store: DamagedStoreOption = None,
) -> None:
    """Copy a damaged run's good prefix (every event before the damage) into another store,
    with a RunSalvaged fact saying so; the damaged store is only read. Then resume the run
    from the new store: ralph resume RUN --store NEW."""
    location = _configured_store(workspace, store) or str(WorkspaceLayout(root=workspace).store)
    try:
        source_path, target_path = store_path(location), store_path(to)
    except StoreError as error:
        raise _fail(str(error)) from error
    if _same_store(location, source_path, to, target_path):
        raise _fail(f"--to names the damaged store itself ({to}); give a new store")
    created = target_path is not None and not target_path.exists()
    with _existing_store(location) as damaged:
        chosen = damaged.choose_run(run_id)
        try:
            with open_store_at(to) as target:
                done = salvage(damaged, chosen, target, source_label=damaged.label, clock=utc_now)
                target.ensure_present()
                found = _reconciled(
                    workspace,
                    chosen,
                    target.read(chosen),
                    events_file=WorkspaceLayout(root=workspace).run_dir(chosen).is_dir(),
                )
                label = target.label
        except BaseException as error:
            # Whatever stopped it (Ctrl-C too), a failed salvage leaves no store it created.
            if created and target_path is not None:
                _remove_store_file(target_path)
            if isinstance(error, RunPresentError | SequenceConflictError):
                raise _fail(f"{to}: {error}") from error
            if isinstance(error, NothingToSalvageError):
                raise _stop(error, STORE_ERROR, "store error") from error
            raise  # any other failure is said by _existing_store
    _salvage_summary(done, damaged.label, label, workspace, to, found)


def _same_store(
    source: str, source_path: Path | None, target: str, target_path: Path | None
) -> bool:
    """Whether ``target`` names the store ``source`` names (then salvaging would write into
    the damaged store): the same file, or the same URL."""
    if source_path is None or target_path is None:
        return source_path is None and target_path is None and source == target
    if source_path.exists() and target_path.exists():
        return os.path.samefile(source_path, target_path)
    return source_path.absolute() == target_path.absolute()


def _remove_store_file(path: Path) -> None:
    """Remove the SQLite file ``path`` and its journal files, which this command created."""
    for leftover in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()


def _salvage_summary(
    done: Salvaged,
    source: str,
    target: str,
    workspace: Path,
    to: str,
    found: Reconciliation | None,
) -> None:
    """Say what was kept and lost, and what to do next: resume, or first sort out what git
    holds past the kept events (a resume would stop on it)."""
    run = done.run_id
    if done.damage is None:
        line = (
            f"Copied run {run} from {source} to {target}: kept all {done.kept} of {done.held} "
            "events; nothing was damaged"
        )
    else:
        line = (
            f"Salvaged run {run} from {source} into {target}: kept {done.kept} of {done.held} "
            f"events; damage at {done.kept}: {done.damage}"
        )
    _print(message_safe(line))
    # A URL's password is never shown, not even in the command to type next.
    verify = message_safe(f"Verify it: ralph replay {shlex.quote(to)} --run {run} --verify")
    _print(verify)
    where = message_safe(f"--store {shlex.quote(to)} -C {shlex.quote(str(workspace))}")
    if done.state.phase is Phase.COMPLETE:
        _print(f"The run is complete: nothing to resume; see it with ralph status {where}")
        return
    if found is not None and found.problems:
        for problem in found.problems:
            _warn(problem)
        _print(
            "ralph resume would stop: the workspace and the kept events disagree (the "
            f"warning says how and what to do); once sorted out: ralph resume {run} {where}"
        )
        return
    _print(f"Resume it: ralph resume {run} {where}")


@app.command()
def runs(
    store: StoreArgument = None,
) -> None:
    """List the runs in an event store with their cost so far; on a PostgreSQL store, the
    queue's tickets too (state, run, events, cost, worker, claims, age, outcome)."""
    with _existing_store(store) as opened:
        listed = opened.runs()
        try:
            tickets = queue_tickets(opened)
        except StoreError as error:
            raise _fail(str(error)) from error
        costs: dict[str, str] = {s.run_id: _run_cost(opened, s.run_id) for s in listed}
    heads, rows = runs_rows(tickets, listed, costs)
    # Shown as written (outcomes quote agents' failures): no markup, escaped.
    out.print(text_table(heads, rows, f"Runs in {opened.label}"))


def _run_cost(store: NamedStore, run_id: RunId) -> str:
    """The known cost of ``run_id`` so far, from its newest checkpoint and the events after
    it (``-`` when no invocation reported usage; unknown costs named, never $0)."""
    state, _checkpoint = load_state(store, run_id, _warn)
    total = state.ledger.spend.total
    return cost_text(total) if total.invocations else "-"


projections = typer.Typer(
    help="Tables computed from the event log (the agent_response_log).", no_args_is_help=True
)


app.add_typer(projections, name="projections")


@projections.command("rebuild")
def rebuild_projections(
    store: StoreArgument = None,
) -> None:
    """Recreate the projections' tables (the agent_response_log; in SQLite also the runs'
    summaries) from the events alone."""
    with _existing_store(store, read_only=False) as opened:
        rows = opened.rebuild_projections()
        runs = len(opened.runs())
    out.print(f"Rebuilt the projections in {opened.label}: {rows} rows from {runs} runs")
