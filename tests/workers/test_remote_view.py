"""Seeing remote tickets (issue 49, slice 6): ``ralph runs URL`` and ``ralph serve URL`` show
each ticket's host and branch, and a remote ticket's run page says where its run is, every
byte from the store shown as text. Real PostgreSQL and bare git remotes; no remote worker
exists yet, so the host and the pushed commit are written as a worker would, through
``RunQueue.claim(..., host=)`` and ``note_pushed``."""

from __future__ import annotations

from pathlib import Path

import pytest
from attrs import frozen
from starlette.testclient import TestClient

from pipeline.app.cli._queue import runs_rows
from pipeline.app.cli._serve_app import make_app
from pipeline.app.cli._serve_guard import Access
from pipeline.app.workers import submit
from pipeline.events import RunId
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import QUEUE, REMOTE_QUEUE, Lease, RunQueue
from tests.runtime.workspace import git, ralph
from tests.support import scripted_run
from tests.workers.remotes import URL_KINDS, bare_remote
from tests.workers.support import queue_workspace

HOST = "[red]<b>h</b>&amp;"
"""The host a worker claimed the remote ticket on: rich markup and HTML, to be shown as text."""

RUN = RunId("run-remote")
"""The run the remote ticket's worker started."""


@frozen(kw_only=True)
class _Queued:
    """A queue holding a remote ticket claimed on :data:`HOST` whose branch was pushed, a
    remote ticket still queued, a path ticket claimed on ``host-b``, and a direct run."""

    remote: str
    claimed: str
    pushed: str
    waiting: str
    path: str


def _queued(postgres_url: str, tmp_path: Path, kind: str = "path") -> _Queued:
    remote = bare_remote(tmp_path, kind)
    submitted = ralph(
        "submit", "--store", postgres_url, "-C", str(remote.clone), "--remote", "origin",
        cwd=tmp_path,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    claimed = submitted.stdout.strip()
    path = submit(postgres_url, queue_workspace(tmp_path / "shared")).ticket
    waiting = submit(postgres_url, remote.clone, remote=remote.url(kind)).ticket
    # What a worker's claim pushes: a commit on the run's branch (here a person's, in the clone).
    (remote.clone / "work.txt").write_text("a step\n")
    git(remote.clone, "add", "work.txt")
    git(remote.clone, "commit", "--quiet", "-m", "a step")
    git(remote.clone, "push", "--quiet", "origin", f"HEAD:refs/heads/ralph/run-{claimed}")
    pushed = git(remote.path, "rev-parse", f"refs/heads/ralph/run-{claimed}")
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        taken = queue.claim("worker-a", 60, queues=(REMOTE_QUEUE,), host=HOST)
        assert taken is not None
        assert taken.ticket == claimed
        assert queue.note_pushed(Lease.of(taken), pushed)
        assert queue.claim("worker-b", 60, queues=(QUEUE,), host="host-b") is not None
        store.append(RunId("run-direct"), 0, scripted_run().events[:3])
    with PostgresEventStore(postgres_url, guard=Lease.of(taken)) as as_worker:
        as_worker.append(RUN, 0, scripted_run().events[:5])
    return _Queued(
        remote=remote.url(kind),
        claimed=claimed,
        pushed=pushed,
        waiting=waiting,
        path=path,
    )


@pytest.mark.parametrize("kind", URL_KINDS)
def test_queue_rows_show_host_and_branch(postgres_url: str, tmp_path: Path, kind: str) -> None:
    """A claimed remote ticket's row has its worker's host and ``ralph/run-T@<pushed[:8]>``; a
    queued one its branch alone (nothing pushed) and no host; a path ticket its host and
    ``-``; a direct run ``-`` for both."""
    queued = _queued(postgres_url, tmp_path, kind)
    with PostgresEventStore(postgres_url) as store:
        tickets = RunQueue(store).tickets()
        runs = store.runs()
    heads, rows = runs_rows(tickets, runs, {r.run_id: "-" for r in runs})
    shown = {
        row[heads.index("ticket")] if row[0] != "-" else row[heads.index("run")]: (
            row[heads.index("host")],
            row[heads.index("branch")],
        )
        for row in rows
    }
    assert shown == {
        queued.claimed: (HOST, f"ralph/run-{queued.claimed}@{queued.pushed[:8]}"),
        queued.waiting: ("-", f"ralph/run-{queued.waiting}"),
        queued.path: ("host-b", "-"),
        "run-direct": ("-", "-"),
    }


def _cells(listing: str, ticket: str) -> dict[str, str]:
    """The cells of ``ticket``'s row in a ``ralph runs`` table, by column."""
    lines = listing.splitlines()
    heads = next(line for line in lines if "┃" in line and "ticket" in line)
    row = next(line for line in lines if ticket in line)
    names = [h.strip() for h in heads.split("┃")[1:-1]]
    return dict(zip(names, (c.strip() for c in row.split("│")[1:-1]), strict=True))


def test_ralph_runs_url_shows_host_and_branch(postgres_url: str, tmp_path: Path) -> None:
    """``ralph runs URL`` (and ``ralph runs`` with the URL in ``RALPH_STORE``, which the lean
    SQLite path leaves to the full command) shows the remote ticket's host as written, markup
    and all, and its branch at the pushed commit; the path ticket's host, and ``-``."""
    queued = _queued(postgres_url, tmp_path)
    given = ralph("runs", postgres_url, cwd=tmp_path)
    from_env = ralph("runs", cwd=tmp_path, env={"RALPH_STORE": postgres_url})
    for listed in (given, from_env):
        assert listed.returncode == 0, listed.stderr
        remote = _cells(listed.stdout, queued.claimed)
        assert (remote["host"], remote["branch"]) == (
            HOST,
            f"ralph/run-{queued.claimed}@{queued.pushed[:8]}",
        )
        path = _cells(listed.stdout, queued.path)
        assert (path["host"], path["branch"]) == ("host-b", "-")


def test_the_serve_pages_show_host_and_branch_as_text(postgres_url: str, tmp_path: Path) -> None:
    """The runs page has the host and branch columns, the hostile host escaped; the remote
    run's page says "on HOST, branch B at SHA of URL"; a direct run's page names no ticket."""
    queued = _queued(postgres_url, tmp_path)
    client = TestClient(
        make_app(postgres_url, tmp_path, Access(secret="t0ken", remote=False)),
        base_url="http://127.0.0.1:8765/t/t0ken",
    )
    escaped = "[red]&lt;b&gt;h&lt;/b&gt;&amp;amp;"
    listing = client.get("/").text
    assert "<th>host</th><th>branch</th>" in listing
    row = listing.split(f">{queued.claimed}<", 1)[1].split("</tr>", 1)[0]
    assert f"<td>{escaped}</td><td>ralph/run-{queued.claimed}@{queued.pushed[:8]}</td>" in row
    path_row = listing.split(f">{queued.path}<", 1)[1].split("</tr>", 1)[0]
    assert "<td>host-b</td><td>-</td>" in path_row
    assert "<b>" not in listing
    page = client.get(f"/runs/{RUN}").text
    assert (
        f"Run by queue ticket {queued.claimed} on {escaped}, branch ralph/run-{queued.claimed} "
        f"at {queued.pushed} of {queued.remote}." in page
    )
    assert "<b>" not in page
    assert "queue ticket" not in client.get("/runs/run-direct").text


def test_the_run_pages_sentence_masks_a_stored_password() -> None:
    """``submit`` refuses a URL with a password, but the store is the team's to write: one
    found there is masked in the run page's sentence, never shown."""
    from datetime import UTC, datetime

    from pipeline.app.cli._queue import ticket_text
    from pipeline.handlers.store.queue import Ticket

    now = datetime.now(UTC)
    ticket = Ticket(
        ticket="t-1", workspace="/ws", config="", prompt="", state="running", run_id="r",
        worker="w", claims=1, outcome=None, submitted_at=now, updated_at=now, job=1,
        remote="https://me:hunter2@example.com/repo.git", branch="ralph/run-t-1", host="h",
        pushed="c0ffee",
    )  # fmt: skip
    said = ticket_text(ticket)
    assert "hunter2" not in said
    assert said.startswith("queue ticket t-1 on h, branch ralph/run-t-1 at c0ffee of https://me:")
