"""The run queue on a real PostgreSQL server: claims never collide, leases expire and move,
and an append by a worker that lost its lease writes nothing."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from pipeline.events import RunId
from pipeline.handlers.store import LeaseLostError, SequenceConflictError
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import Lease, QueueBell, RunQueue, TicketState
from tests.handlers.store.contract import topics


def _queue(url: str, tickets: int) -> None:
    with PostgresEventStore(url) as store:
        queue = RunQueue(store)
        for i in range(tickets):
            queue.submit(f"t-{i:03}", Path(f"/ws/{i}"), "[chains]", "do it")


def test_workers_claiming_at_once_each_get_a_different_ticket(postgres_url: str) -> None:
    """Eight claimers race over twenty tickets (SKIP LOCKED): every ticket is claimed by
    exactly one of them, and a ninth finds nothing left."""
    _queue(postgres_url, 20)
    claimed: dict[str, list[str]] = {}
    barrier = threading.Barrier(8)

    def claim_all(worker: str) -> None:
        with PostgresEventStore(postgres_url) as store:
            queue = RunQueue(store)
            barrier.wait()
            mine = []
            while (ticket := queue.claim(worker, 60)) is not None:
                mine.append(ticket.ticket)
            claimed[worker] = mine

    threads = [threading.Thread(target=claim_all, args=(f"w{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [t for mine in claimed.values() for t in mine]
    assert sorted(every) == [f"t-{i:03}" for i in range(20)]
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        assert queue.claim("w9", 60) is None
        assert {t.status for t in queue.tickets()} == {TicketState.RUNNING}


def test_an_expired_lease_is_claimed_again_and_the_stale_worker_cannot_write(
    postgres_url: str,
) -> None:
    """A claims, starts the run, stops renewing; after the lease B claims the ticket. A's
    next append fails with LeaseLostError and writes nothing; A can neither renew, finish
    nor release it; B appends and finishes."""
    _queue(postgres_url, 1)
    with (
        PostgresEventStore(postgres_url) as plain,
        PostgresEventStore(postgres_url, guard=Lease(ticket="t-000", worker="A")) as as_a,
        PostgresEventStore(postgres_url, guard=Lease(ticket="t-000", worker="B")) as as_b,
    ):
        queue = RunQueue(plain)
        first = queue.claim("A", 0.5)
        assert first is not None
        assert first.claims == 1
        run = RunId("run-q")
        as_a.append(run, 0, topics(2))
        assert queue.run_of("t-000") == run
        assert queue.claim("B", 0.5) is None, "the lease still holds"
        time.sleep(0.6)
        second = queue.claim("B", 30)
        assert second is not None
        assert (second.worker, second.claims, second.run_id) == ("B", 2, run)
        with pytest.raises(LeaseLostError, match="no longer holds run t-000"):
            as_a.append(run, 2, topics(1, start=2))
        assert plain.head(run) == 2
        assert not queue.renew("t-000", "A", 30)
        assert not queue.finish("t-000", "A", TicketState.DONE, "x")
        assert not queue.release("t-000", "A")
        assert as_b.append(run, 2, topics(3, start=2)) == 5
        assert queue.finish("t-000", "B", TicketState.DONE, "completed")
        done = queue.get("t-000")
        assert done is not None
        assert (done.status, done.outcome) == (TicketState.DONE, "completed")
        assert queue.claim("C", 30) is None


def test_a_released_ticket_is_claimed_at_once_and_resumes_its_run(postgres_url: str) -> None:
    """Released (a worker shutting down), the ticket is queued again with its run id, and
    the next claim takes it without waiting for a lease."""
    _queue(postgres_url, 1)
    with (
        PostgresEventStore(postgres_url) as plain,
        PostgresEventStore(postgres_url, guard=Lease(ticket="t-000", worker="A")) as as_a,
    ):
        queue = RunQueue(plain)
        assert queue.claim("A", 600) is not None
        as_a.append(RunId("run-r"), 0, topics(1))
        assert queue.release("t-000", "A")
        again = queue.claim("B", 600)
        assert again is not None
        assert (again.worker, again.run_id, again.claims) == ("B", "run-r", 2)


def test_a_leased_append_still_checks_the_expected_sequence(postgres_url: str) -> None:
    """Holding the lease does not excuse a stale expected sequence."""
    _queue(postgres_url, 1)
    with (
        PostgresEventStore(postgres_url) as plain,
        PostgresEventStore(postgres_url, guard=Lease(ticket="t-000", worker="A")) as as_a,
    ):
        assert RunQueue(plain).claim("A", 600) is not None
        as_a.append(RunId("run-s"), 0, topics(2))
        with pytest.raises(SequenceConflictError):
            as_a.append(RunId("run-s"), 1, topics(1, start=9))


def test_finish_refuses_a_state_that_is_not_an_end(postgres_url: str) -> None:
    """A ticket ends done or failed; asking for another state is a programming error."""
    with (
        PostgresEventStore(postgres_url) as store,
        pytest.raises(ValueError, match="done or failed"),
    ):
        RunQueue(store).finish("t-x", "A", TicketState.QUEUED, "no")


def test_a_submitted_or_released_ticket_is_announced_once(postgres_url: str) -> None:
    """Submitting rings the bell (a retried submit of the same ticket does not); a release
    by the holder rings it, a release by anyone else does not."""
    bell = QueueBell(postgres_url)
    try:
        assert not bell.wait(0.2, lambda: False), "nothing announced yet"
        _queue(postgres_url, 1)
        assert bell.wait(5, lambda: False)
        with PostgresEventStore(postgres_url) as store:
            queue = RunQueue(store)
            queue.submit("t-000", Path("/ws/0"), "[chains]", "do it")  # a retry
            assert not bell.wait(0.3, lambda: False)
            assert queue.claim("w1", 60) is not None
            assert not queue.release("t-000", "w2")
            assert not bell.wait(0.3, lambda: False)
            assert queue.release("t-000", "w1")
            assert bell.wait(5, lambda: False)
    finally:
        bell.close()


def test_a_waiting_bell_stops_when_asked_and_survives_a_lost_connection(
    postgres_url: str,
) -> None:
    """``stopping()`` ends a wait early; a listening session the server ends makes that wait
    a plain sleep, and the next wait listens again."""
    bell = QueueBell(postgres_url)
    try:
        began = time.monotonic()
        assert not bell.wait(30, lambda: time.monotonic() - began > 0.3)
        assert time.monotonic() - began < 5
        listener = bell._listening()
        assert listener is not None
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (listener.info.backend_pid,))
        assert not bell.wait(0.5, lambda: False)
        later = threading.Timer(1.0, _queue, (postgres_url, 1))
        later.start()  # submitted while the next wait listens again
        try:
            assert bell.wait(20, lambda: False)
        finally:
            later.join()
    finally:
        bell.close()


def test_a_cancelled_ticket_is_never_claimed_and_its_worker_cannot_write(
    postgres_url: str,
) -> None:
    """Cancelling gives the ticket as it was (queued, or running under A); a cancelled
    ticket is never claimed, its worker can neither append, renew, finish nor release it,
    and an ended or unknown ticket cannot be cancelled."""
    _queue(postgres_url, 3)
    with (
        PostgresEventStore(postgres_url) as plain,
        PostgresEventStore(postgres_url, guard=Lease(ticket="t-000", worker="A")) as as_a,
    ):
        queue = RunQueue(plain)
        assert queue.claim("A", 600) is not None  # t-000
        run = RunId("run-c")
        as_a.append(run, 0, topics(2))
        was = queue.cancel("t-000", "not needed any more")
        assert was is not None
        assert (was.status, was.worker) == (TicketState.RUNNING, "A")
        with pytest.raises(LeaseLostError):
            as_a.append(run, 2, topics(1, start=2))
        assert plain.head(run) == 2
        assert not queue.renew("t-000", "A", 30)
        assert not queue.finish("t-000", "A", TicketState.DONE, "x")
        assert not queue.release("t-000", "A")
        queued = queue.cancel("t-001")
        assert queued is not None
        assert (queued.status, queued.worker) == (TicketState.QUEUED, None)
        claimed = queue.claim("B", 600)
        assert claimed is not None
        assert claimed.ticket == "t-002", "cancelled tickets are skipped"
        assert queue.finish("t-002", "B", TicketState.DONE, "completed")
        assert queue.cancel("t-002") is None, "ended already"
        assert queue.cancel("t-000") is None, "cancelled already"
        assert queue.cancel("t-nope") is None
        ended = queue.get("t-000")
        assert ended is not None
        assert (ended.status, ended.outcome) == (TicketState.CANCELLED, "not needed any more")
