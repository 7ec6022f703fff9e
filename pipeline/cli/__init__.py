"""The ``ralph`` command line (typer + rich). Library code never exits or prints; this does."""

from __future__ import annotations

import os
import secrets
import sys
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.table import Table

from pipeline.cli._demo import demo_world, prepare_directory
from pipeline.cli._logfile import EventLogError, write_event_log
from pipeline.cli._render import describe_event, state_table
from pipeline.cli._source import LogSource, open_source
from pipeline.engine import run_durable
from pipeline.errors import WireFormatError
from pipeline.events import PipelineEvent
from pipeline.handlers.store import DEFAULT_STORE_PATH, SqliteEventStore, StoreError
from pipeline.reducers import reduce
from pipeline.serialization import (
    CheckpointError,
    checkpoint_state,
    encode_state,
    unstructure_event,
)
from pipeline.state import PipelineState

__all__ = ["app", "main"]

app = typer.Typer(
    name="ralph",
    help="Run AI coding agents in a durable, replayable plan/develop/review/commit loop.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Console(Console):
    """A console that goes quiet when its reader goes away, instead of ending the program."""

    def on_broken_pipe(self) -> None:
        """Stop printing; the command still finishes its work (and writes its files)."""
        self.quiet = True
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


out = _Console(highlight=False)
err = Console(stderr=True, highlight=False)

USAGE_ERROR = 2


class LogFormat(StrEnum):
    """How ``ralph events`` prints the log."""

    TABLE = "table"
    JSONL = "jsonl"


def _fail(message: str) -> typer.Exit:
    err.print(f"[bold red]error:[/] {message}", soft_wrap=True)
    return typer.Exit(USAGE_ERROR)


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="A new directory for the demo's store, log and final state.")
    ] = Path("ralph-demo"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")] = False,
) -> None:
    """Run a whole pipeline durably against a simulated world and show every fact it records."""
    try:
        prepare_directory(directory)
    except (FileExistsError, OSError) as error:
        raise _fail(str(error)) from error
    run_id = f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"

    def show(state: PipelineState, event: PipelineEvent) -> None:
        if not quiet:
            phase = state.phase.value
            line = f"[dim]{state.sequence:>4}[/] [cyan]{phase:<16}[/] {describe_event(event)}"
            out.print(line, soft_wrap=True)

    store_path = directory / DEFAULT_STORE_PATH
    with SqliteEventStore(store_path) as store:
        result = run_durable(store, demo_world(run_id), on_event=show, max_effects=10_000)
        write_event_log(directory / "events.jsonl", store.read(result.run_id))
    (directory / "state.json").write_bytes(encode_state(result.state) + b"\n")
    out.print(state_table(result.state, title="Demo run finished"))
    out.print(f"Event store: {store_path}  (run {result.run_id}, {result.state.sequence} events)")
    out.print(f"Exported: {directory / 'events.jsonl'} and {directory / 'state.json'}")
    out.print(f"Replay it: ralph replay {store_path} --verify")
    termination = result.state.termination
    raise typer.Exit(termination.exit_code if termination else 1)


SourceArgument = Annotated[
    Path | None,
    typer.Argument(help="An event store (default .ralph/pipeline.db) or a .jsonl log."),
]
RunOption = Annotated[
    str | None, typer.Option("--run", help="The run to read (default: the latest).")
]


@app.command()
def replay(
    source: SourceArgument = None,
    run: RunOption = None,
    until: Annotated[
        int | None, typer.Option(help="Fold only the first UNTIL events.", min=0)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="Check the fold against every stored checkpoint."),
    ] = False,
    against: Annotated[
        Path | None,
        typer.Option(help="A state file (JSON) the fold must equal; exit 1 when it differs."),
    ] = None,
) -> None:
    """Fold a run's event log into its state and print it (works on a run in progress)."""
    try:
        with open_source(source, run) as log:
            if verify and not log.is_store:
                raise _fail(f"--verify checks a store's checkpoints; {log.label} has none")
            state, problems, checked = _fold_and_check(log, until, verify)
    except (EventLogError, StoreError, WireFormatError) as error:
        raise _fail(str(error)) from error
    if as_json:
        sys.stdout.write(encode_state(state).decode() + "\n")
    else:
        out.print(state_table(state, title=f"Replay of {log.label}"))
    if verify:
        for problem in problems:
            err.print(f"[bold red]mismatch:[/] {problem}", soft_wrap=True)
        if problems:
            raise typer.Exit(1)
        out.print(f"verified: the fold equals all {checked} stored checkpoints")
    if against is not None:
        try:
            expected = against.read_bytes().strip()
        except OSError as error:
            raise _fail(f"cannot read {against}: {error.strerror}") from error
        if encode_state(state) != expected:
            err.print(f"[bold red]mismatch:[/] the fold of {log.label} differs from {against}")
            raise typer.Exit(1)
        out.print(f"verified: the fold equals {against}")


def _fold_and_check(
    log: LogSource, until: int | None, verify: bool
) -> tuple[PipelineState, list[str], int]:
    """Fold the log (up to ``until``); with ``verify``, compare every checkpoint on the way."""
    checkpoints = {c.sequence: c for c in log.checkpoints} if verify else {}
    problems: list[str] = []
    checked = 0

    def check(state: PipelineState) -> None:
        nonlocal checked
        checkpoint = checkpoints.pop(state.sequence, None)
        if checkpoint is None:
            return
        checked += 1
        try:
            stored = checkpoint_state(checkpoint, f"checkpoint {checkpoint.sequence}")
        except CheckpointError as error:
            problems.append(str(error))
            return
        if stored != state:
            problems.append(f"checkpoint {checkpoint.sequence} differs from the fold of the log")

    state = PipelineState()
    for event in log.events():
        if until is not None and state.sequence >= until:
            break
        check(state)
        state = reduce(state, event)
    check(state)
    if until is None:
        problems += [f"checkpoint {s} lies beyond the end of the log" for s in sorted(checkpoints)]
    return state, problems, checked


@app.command()
def events(
    source: SourceArgument = None,
    run: RunOption = None,
    output: Annotated[
        LogFormat, typer.Option("--format", help="table or jsonl.")
    ] = LogFormat.TABLE,
) -> None:
    """Print a run's events, one per line (works on a run in progress)."""
    try:
        with open_source(source, run) as log:
            for number, event in enumerate(log.events()):
                if output is LogFormat.JSONL:
                    sys.stdout.write(orjson.dumps(unstructure_event(event)).decode() + "\n")
                else:
                    at = event.at.isoformat(timespec="seconds")
                    out.print(f"{number:>5}  {at}  {describe_event(event)}", soft_wrap=True)
    except (EventLogError, StoreError, WireFormatError) as error:
        raise _fail(str(error)) from error


@app.command()
def runs(
    store: Annotated[Path, typer.Argument(help="An event store.")] = DEFAULT_STORE_PATH,
) -> None:
    """List the runs in an event store."""
    if not store.is_file():
        raise _fail(f"no event store at {store}")
    try:
        with SqliteEventStore(store) as opened:
            listed = opened.runs()
    except StoreError as error:
        raise _fail(str(error)) from error
    table = Table(title=f"Runs in {store}")
    for column in ("run", "events", "started"):
        table.add_column(column)
    for summary in listed:
        table.add_row(summary.run_id, str(summary.events), summary.started_at)
    out.print(table)


def main() -> None:
    """Entry point of the ``ralph`` console script."""
    app()
