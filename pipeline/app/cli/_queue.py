"""``ralph worker --concurrency N`` and ``ralph runs`` on a queue: the parts that are not
printing (I/O: starts worker processes, reads the queue)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import TYPE_CHECKING

from pipeline.handlers.redaction import mask_url_passwords
from pipeline.handlers.store import NamedStore, RunSummary, SqliteEventStore

if TYPE_CHECKING:  # psycopg comes with the optional extra; the CLI must load without it
    from pipeline.handlers.store.queue import Ticket

__all__ = [
    "WORKER_PARENT_ENV",
    "age",
    "queue_rows",
    "queue_tickets",
    "run_worker_processes",
    "runs_rows",
    "ticket_text",
]

WORKER_PARENT_ENV = "RALPH_WORKER_PARENT"
"""The parent's pid, in the environment of each worker it starts (``pipeline.app.workers`` reads
it under the same name; the CLI must load without that package's PostgreSQL driver)."""


def run_worker_processes(count: int, url: str, argv: Sequence[str]) -> int:
    """Start ``count`` single-run workers (``ralph worker`` with ``argv``, the store ``url``
    in their environment, never on a command line others can read), pass SIGTERM and SIGINT
    on to them, and wait for all; the exit status is the worst of theirs. Each child stops
    (as on SIGTERM) when this process dies, even by kill -9."""
    # -P: ``-m`` would put the current folder first on the import path; started in a work
    # tree, an agent's ``pipeline`` package there would run as the workers.
    command = [sys.executable, "-P", "-m", "pipeline.app.cli", "worker", *argv]
    command += ["--concurrency", "1"]
    # The children watch this pid and stop when it is gone (kill -9 passes nothing on).
    env = {**os.environ, "RALPH_STORE": url, WORKER_PARENT_ENV: str(os.getpid())}
    children = [subprocess.Popen(command, env=env) for _ in range(count)]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    previous = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while any(child.poll() is None for child in children):
            time.sleep(0.1)
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
    return max(abs(int(child.returncode)) for child in children)


def age(since: datetime, now: datetime | None = None) -> str:
    """How long ago ``since`` was, short: ``42s``, ``7m``, ``3h``, ``2d``."""
    seconds = max(0, int(((now or datetime.now(UTC)) - since).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def queue_tickets(store: NamedStore) -> list[Ticket] | None:
    """The queue's tickets of a PostgreSQL store (None: a SQLite store has no queue)."""
    if isinstance(store, SqliteEventStore):
        return None
    from pipeline.handlers.store.postgres import PostgresEventStore
    from pipeline.handlers.store.queue import RunQueue

    assert isinstance(store, PostgresEventStore)
    return RunQueue(store).tickets()


def _branch_cell(ticket: Ticket) -> str:
    """A ticket's branch as ``ralph runs`` shows it: ``ralph/run-T@<first 8 of the last
    pushed commit>`` (the branch alone before a worker pushed it), or ``-`` for a path
    ticket, which has none of its own."""
    if ticket.branch is None:
        return "-"
    return f"{ticket.branch}@{ticket.pushed[:8]}" if ticket.pushed else ticket.branch


def ticket_text(ticket: Ticket) -> str:
    """Which ticket runs a run, and for a remote ticket where: ``queue ticket T on HOST,
    branch B at SHA of URL`` (plain text, to be escaped where it is shown)."""
    said = f"queue ticket {ticket.ticket}"
    if ticket.remote is None:
        return said
    at = f"at {ticket.pushed}" if ticket.pushed else "not pushed yet"
    # submit refuses a URL with a password, but the store is anyone's to write: masked anyway
    url = mask_url_passwords(ticket.remote)
    return f"{said} on {ticket.host or 'no host yet'}, branch {ticket.branch} {at} of {url}"


def queue_rows(
    tickets: Sequence[Ticket], runs: Sequence[RunSummary], costs: Mapping[str, str]
) -> list[list[str]]:
    """One row per ticket (ticket, state, run, events, cost, worker, host, branch, claims,
    age, outcome), then the store's runs that no ticket started (run with ``ralph run
    --store``); ``costs`` gives each run's cost as shown."""
    events: dict[str, int] = {run.run_id: run.events for run in runs}
    rows = []
    for ticket in tickets:
        rows.append(
            [
                ticket.ticket,
                ticket.state,
                ticket.run_id or "-",
                str(events.get(ticket.run_id, 0)) if ticket.run_id else "-",
                costs.get(ticket.run_id, "-") if ticket.run_id else "-",
                ticket.worker or "-",
                ticket.host or "-",
                _branch_cell(ticket),
                str(ticket.claims),
                age(ticket.submitted_at),
                ticket.outcome or "",
            ]
        )
    queued = {ticket.run_id for ticket in tickets}
    for run in runs:
        if run.run_id not in queued:
            started = datetime.fromisoformat(run.started_at)
            cost = costs.get(run.run_id, "-")
            nobody = ["-"] * 4  # no worker, host, branch or claims: not from the queue
            rows.append(
                ["-", "direct", run.run_id, str(run.events), cost, *nobody, age(started), ""]
            )
    return rows


def runs_rows(
    tickets: Sequence[Ticket] | None, runs: Sequence[RunSummary], costs: Mapping[str, str]
) -> tuple[tuple[str, ...], list[list[str]]]:
    """The heads and rows of a store's runs (``ralph runs``, ``ralph serve``): one row per
    run (run, events, cost, started), or with a queue's ``tickets``, :func:`queue_rows`."""
    if tickets is None:
        rows = [[run.run_id, str(run.events), costs[run.run_id], run.started_at] for run in runs]
        return ("run", "events", "cost", "started"), rows
    heads = ("ticket", "state", "run", "events", "cost", "worker", "host", "branch", "claims")
    return (*heads, "age", "outcome"), queue_rows(tickets, runs, costs)
