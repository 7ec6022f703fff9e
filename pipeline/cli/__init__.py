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

from pipeline.cli._demo import demo_world, prepare_directory
from pipeline.cli._logfile import EventLogError, read_event_log, write_event_log
from pipeline.cli._render import describe_event, state_table
from pipeline.engine import run_in_memory
from pipeline.events import PipelineEvent
from pipeline.reducers import reduce
from pipeline.serialization import encode_state, unstructure_event
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
        Path, typer.Argument(help="Where to put the demo's event log and final state.")
    ] = Path("ralph-demo"),
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the summary.")] = False,
) -> None:
    """Run a whole pipeline against a simulated world and show every fact it records."""
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

    result = run_in_memory(demo_world(run_id), on_event=show, max_effects=10_000)
    log_path = directory / "events.jsonl"
    state_path = directory / "state.json"
    write_event_log(log_path, result.events)
    state_path.write_bytes(encode_state(result.state) + b"\n")
    out.print(state_table(result.state, title="Demo run finished"))
    out.print(f"Event log: {log_path}  ({len(result.events)} events)")
    out.print(f"Final state: {state_path}")
    out.print(f"Replay it: ralph replay {log_path}")
    termination = result.state.termination
    raise typer.Exit(termination.exit_code if termination else 1)


@app.command()
def replay(
    log: Annotated[Path, typer.Argument(help="An event log (JSON Lines) to fold.")],
    until: Annotated[
        int | None, typer.Option(help="Fold only the first UNTIL events.", min=0)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the state as JSON.")] = False,
    verify: Annotated[
        Path | None,
        typer.Option(help="A state file (JSON) the fold must equal; exit 1 when it differs."),
    ] = None,
) -> None:
    """Fold an event log into the run's state and print it."""
    state = PipelineState()
    try:
        for event in read_event_log(log):
            if until is not None and state.sequence >= until:
                break
            state = reduce(state, event)
    except EventLogError as error:
        raise _fail(str(error)) from error
    if as_json:
        sys.stdout.write(encode_state(state).decode() + "\n")
    else:
        out.print(state_table(state, title=f"Replay of {log}"))
    if verify is not None:
        try:
            expected = verify.read_bytes().strip()
        except OSError as error:
            raise _fail(f"cannot read {verify}: {error.strerror}") from error
        if encode_state(state) != expected:
            err.print(f"[bold red]mismatch:[/] the fold of {log} differs from {verify}")
            raise typer.Exit(1)
        out.print(f"verified: the fold equals {verify}")


@app.command()
def events(
    log: Annotated[Path, typer.Argument(help="An event log (JSON Lines) to print.")],
    output: Annotated[
        LogFormat, typer.Option("--format", help="table or jsonl.")
    ] = LogFormat.TABLE,
) -> None:
    """Print the events of a log, one per line."""
    try:
        for number, event in enumerate(read_event_log(log)):
            if output is LogFormat.JSONL:
                sys.stdout.write(orjson.dumps(unstructure_event(event)).decode() + "\n")
            else:
                at = event.at.isoformat(timespec="seconds")
                out.print(f"{number:>5}  {at}  {describe_event(event)}", soft_wrap=True)
    except EventLogError as error:
        raise _fail(str(error)) from error


def main() -> None:
    """Entry point of the ``ralph`` console script."""
    app()
