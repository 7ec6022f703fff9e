"""How a worker settles tickets it cannot run: a workspace gone, a ticket its workers keep
dying on. The worker runs in this process (the Python API), against a real server."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from pipeline.app.workers import Worker, WorkerReport, submit
from pipeline.app.workers._worker import _Outcome
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, TicketState
from tests.workers.support import queue_workspace


def test_a_ticket_whose_workspace_is_gone_fails_with_the_reason(
    tmp_path: Path, postgres_url: str
) -> None:
    """The workspace was removed after submission: the ticket is failed, saying so, and the
    worker goes on (exit when idle) instead of stopping."""
    root = queue_workspace(tmp_path / "ws")
    ticket = submit(postgres_url, root)
    shutil.rmtree(root)
    lines: list[str] = []
    report = Worker(postgres_url, poll_s=0.05, on_message=lines.append).run(exit_when_idle=True)
    assert (report.claimed, report.failed, report.done) == (1, 1, 0)
    with PostgresEventStore(postgres_url) as store:
        failed = RunQueue(store).get(ticket.ticket)
    assert failed is not None
    assert failed.state is TicketState.FAILED
    assert failed.outcome is not None
    assert f"{root.resolve()} is not a directory" in failed.outcome
    assert any(line.startswith(f"{ticket.ticket}: failed") for line in lines)


def test_a_ticket_claimed_too_often_is_failed_instead_of_run_again(
    tmp_path: Path, postgres_url: str
) -> None:
    """A ticket whose worker died (its lease lapsed) past ``max_claims`` claims is marked
    failed by the next worker, which does not run it."""
    ticket = submit(postgres_url, queue_workspace(tmp_path / "ws"))
    with PostgresEventStore(postgres_url) as store:
        assert RunQueue(store).claim("ghost", 0.2) is not None
    time.sleep(0.3)
    # The ghost's silence counts after the taker's lease (procrastinate's stalled timeout).
    report = Worker(postgres_url, lease_s=0.2, poll_s=0.05, max_claims=1).run(exit_when_idle=True)
    assert (report.claimed, report.failed) == (1, 1)
    with PostgresEventStore(postgres_url) as store:
        failed = RunQueue(store).get(ticket.ticket)
        assert failed is not None
        assert failed.state is TicketState.FAILED
        assert failed.outcome == "claimed 2 times without finishing; not run again"
        assert failed.run_id is None
        assert store.runs() == []


def test_a_run_cut_short_by_an_outage_is_released_not_said_taken_over(
    tmp_path: Path, postgres_url: str
) -> None:
    """A store error ended the run while this worker still held the ticket (nobody took it
    over): once the store answers, the worker gives the ticket back and says so, instead of
    "left to the worker that took it over". Held by another worker, it names that worker."""
    ticket = submit(postgres_url, queue_workspace(tmp_path / "ws")).ticket
    lines: list[str] = []
    worker = Worker(postgres_url, name="w-1", on_message=lines.append)
    report = WorkerReport()
    outage = _Outcome(state=None, detail="store error: the server closed the connection")
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        claimed = queue.claim("w-1", 30)
        assert claimed is not None
        worker._settle(queue, claimed, outage, report)
        assert lines[-1].startswith(f"{ticket}: released: the next claim resumes its run")
        assert "took it over" not in lines[-1]
        assert (report.released, report.lost) == (1, 0)
        back = queue.get(ticket)
        assert back is not None
        assert (back.state, back.worker) == (TicketState.QUEUED, None)

        assert queue.claim("w-2", 30) is not None
        worker._settle(queue, claimed, outage, report)  # w-1's claim, given back before
        assert lines[-1].startswith(f"{ticket}: taken over by w-2")
        assert report.lost == 1
