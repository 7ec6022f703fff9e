"""``submit_run`` of ``ralph mcp --control``: a ticket in a real PostgreSQL queue, as
``ralph submit`` queues it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, TicketState
from tests.cli.test_mcp_control import control
from tests.workers.support import queue_workspace

pytestmark = pytest.mark.slow  # a PostgreSQL server


def test_submit_run_queues_a_ticket_as_ralph_submit_does(tmp_path: Path, postgres_url: str) -> None:
    """The tool queues the workspace with the prompt given, as ``ralph submit --prompt``
    does (the ticket holds the workspace, its ``ralph.toml`` and the prompt), and
    ``list_runs`` then shows the ticket."""
    root = queue_workspace(tmp_path / "ws")
    ((error, said), (_, listed)) = control(
        root,
        [("submit_run", {"prompt": "Queue this task."}), ("list_runs", {})],
        "--store",
        postgres_url,
    )
    assert not error, said
    found = re.fullmatch(r"Queued ticket (t-[0-9a-f]+)\.", said)
    assert found is not None, said
    with PostgresEventStore(postgres_url) as store:
        ticket = RunQueue(store).get(found.group(1))
    assert ticket is not None
    assert ticket.state is TicketState.QUEUED
    assert ticket.prompt == "Queue this task."
    assert Path(ticket.workspace) == root.resolve()
    assert ticket.config == (root / "ralph.toml").read_text()
    assert found.group(1) in listed
