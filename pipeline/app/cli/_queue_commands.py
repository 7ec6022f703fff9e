"""``ralph submit``, ``cancel`` and ``worker``: the run queue on PostgreSQL."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import (
    OtelFileOption,
    OtelOption,
    StoreOption,
    WorkspaceOption,
    _fail,
    _open,
    app,
    err,
)
from pipeline.app.cli._queue import run_worker_processes
from pipeline.app.cli._safe import message_safe
from pipeline.app.cli._tracing import TracingSetupError, ticket_tracing
from pipeline.app.workflows import PresetError, load_preset
from pipeline.app.workspace import (
    RunSetupError,
)
from pipeline.core.config import ConfigError
from pipeline.handlers.store import (
    StoreError,
    store_path,
)

_POSTGRES_HINT = (
    "the queue needs PostgreSQL support; install the extra: pip install 'ralph-pipeline[postgres]'"
)


def _queue_url(store: str | None) -> str:
    """The PostgreSQL URL ``--store`` (or RALPH_STORE) names; a usage error otherwise."""
    if store is None:
        raise _fail("say which queue: --store postgresql://USER@HOST:PORT/DATABASE or RALPH_STORE")
    try:
        path = store_path(store)
    except StoreError as error:
        raise _fail(str(error)) from error
    if path is not None:
        raise _fail(f"the queue lives in PostgreSQL; {store} is a SQLite store")
    return store


@app.command()
def submit(
    workspace: WorkspaceOption = Path(),
    prompt: Annotated[str | None, typer.Option(help="The task, as text.")] = None,
    prompt_file: Annotated[
        Path | None, typer.Option(help="A file holding the task (default: PROMPT.md).")
    ] = None,
    store: StoreOption = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="Run this workflow preset over the workspace's ralph.toml (ralph presets "
            "lists them; a chain NAME,NAME is for ralph run only).",
        ),
    ] = None,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote",
            metavar="NAME|URL",
            help="Run it through this git remote (a remote's name or a URL without a password) "
            "on any worker's host: from this clone's HEAD, which the remote must hold, on the "
            "branch ralph/run-TICKET, landing on the current branch.",
        ),
    ] = None,
    allow_dirty: Annotated[
        bool,
        typer.Option(
            "--allow-dirty",
            help="With --remote: submit HEAD even though tracked files have uncommitted "
            "changes (they stay behind in this clone).",
        ),
    ] = False,
) -> None:
    """Queue a pipeline run of the workspace for the workers (prints the ticket)."""
    chosen = None
    if preset is not None:
        if "," in preset:
            raise _fail(
                f"--preset {preset!r}: a chain runs in one workspace with ralph run; "
                "submit one preset per ticket"
            )
        try:
            chosen = load_preset(preset)
        except PresetError as error:
            raise _fail(str(error)) from error
    if store is None:
        # The workspace may name its team's database itself ([store] url).
        store = _open(workspace).config.store.url
    url = _queue_url(store)
    try:
        from pipeline.app.workers import RemoteError
        from pipeline.app.workers import submit as submit_run
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    try:
        ticket = submit_run(
            url, workspace, prompt=prompt, prompt_file=prompt_file, preset=chosen,
            remote=remote, allow_dirty=allow_dirty,
        )  # fmt: skip
    except (ConfigError, RunSetupError, RemoteError, StoreError, OSError) as error:
        raise _fail(str(error)) from error
    where = ticket.workspace if ticket.remote is None else f"{ticket.branch} of {ticket.remote}"
    err.print(f"Queued {ticket.ticket} for {where}", markup=False)
    sys.stdout.write(ticket.ticket + "\n")


@app.command()
def cancel(
    ticket: Annotated[str, typer.Argument(help="The ticket, as ralph submit printed it.")],
    store: StoreOption = None,
    reason: Annotated[str, typer.Option(help="Recorded as the ticket's outcome.")] = "cancelled",
) -> None:
    """Cancel a queued or running pipeline: a queued one never runs; a running one is
    stopped by its worker (agent included) within a third of its lease."""
    url = _queue_url(store)
    try:
        from pipeline.app.workers import CancelError
        from pipeline.app.workers import cancel as cancel_ticket
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    try:
        before = cancel_ticket(url, ticket, why=reason)
    except (CancelError, StoreError) as error:
        raise _fail(str(error)) from error
    if before.worker is not None and before.state == "running":
        was = f"running under worker {before.worker}, which stops it"
    else:
        was = before.state
    err.print(f"Cancelled {before.ticket} (it was {was})", markup=False)


@app.command()
def worker(
    store: StoreOption = None,
    concurrency: Annotated[
        int, typer.Option(min=1, help="How many pipelines to run at once (one process each).")
    ] = 1,
    lease_seconds: Annotated[
        float,
        typer.Option(
            min=0.1,
            help="How long a claim holds without a heartbeat (takeover after death); "
            "give every worker of a fleet the same.",
        ),
    ] = 30.0,
    poll_seconds: Annotated[
        float,
        typer.Option(
            min=0.01,
            help="How long an idle worker waits between looks at the queue (a submission "
            "wakes it sooner).",
        ),
    ] = 1.0,
    exit_when_idle: Annotated[
        bool, typer.Option("--exit-when-idle", help="Stop when nothing is left to claim.")
    ] = False,
    otel: OtelOption = False,
    otel_file: OtelFileOption = None,
    workdir: Annotated[
        Path | None,
        typer.Option(
            help="Run the remote tickets (ralph submit --remote), in repositories made in this "
            "folder, pushing each commit; without it, the path tickets. The --concurrency "
            "workers share it.",
        ),
    ] = None,
) -> None:
    """Claim queued pipelines and run them, keeping a heartbeat; SIGTERM interrupts the run at
    work cleanly and gives its ticket back to the queue. With --otel or --otel-file, each
    ticket's run is a trace of its own: a ``ralph ticket`` span parenting its effect spans."""
    url = _queue_url(store)
    if concurrency > 1:
        if otel_file is not None:
            raise _fail(
                "--otel-file takes one worker's spans; with --concurrency, use --otel and "
                "a collector (opentelemetry-instrument ralph worker ...)"
            )
        argv = ["--lease-seconds", str(lease_seconds), "--poll-seconds", str(poll_seconds)]
        argv += ["--exit-when-idle"] if exit_when_idle else []
        argv += ["--otel"] if otel else []
        argv += [] if workdir is None else ["--workdir", str(workdir.absolute())]
        raise typer.Exit(run_worker_processes(concurrency, url, argv))
    try:
        from pipeline.app.workers import PARENT_ENV, Worker, exit_with_parent
    except ImportError as error:
        raise _fail(_POSTGRES_HINT) from error
    parent = os.environ.pop(PARENT_ENV, None)
    if parent is not None and parent.isdigit():
        # One of --concurrency N's workers: it must not outlive the process that started it.
        exit_with_parent(int(parent))

    def say(line: str) -> None:
        err.print(message_safe(line), markup=False, soft_wrap=True)

    try:
        with ticket_tracing(otel=otel, otel_file=otel_file) as traced:
            report = Worker(
                url,
                lease_s=lease_seconds,
                poll_s=poll_seconds,
                on_message=say,
                traced=traced,
                workdir=None if workdir is None else workdir.absolute(),
            ).run(exit_when_idle=exit_when_idle)
    except (StoreError, TracingSetupError) as error:
        raise _fail(str(error)) from error
    say(
        f"claimed {report.claimed}: {report.done} done, {report.failed} failed, "
        f"{report.released} released, {report.lost} taken over, {report.cancelled} cancelled"
    )
