"""The run queue (procrastinate's jobs) on a real PostgreSQL server: claims never collide,
a silent holder's job moves, and an append by a worker that lost its lease writes nothing."""

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
from tests.postgres import schema_at


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
        assert {t.state for t in queue.tickets()} == {TicketState.RUNNING}


def test_a_silent_holder_is_taken_over_and_the_stale_worker_cannot_write(
    postgres_url: str,
) -> None:
    """A claims, starts the run, stops beating; a lease after its last heartbeat B claims
    the ticket (A's holder pruned, its job retried). A's next append fails with
    LeaseLostError and writes nothing; A can neither beat, finish nor release it; B appends
    and finishes."""
    _queue(postgres_url, 1)
    with PostgresEventStore(postgres_url) as plain:
        queue = RunQueue(plain)
        first = queue.claim("A", 0.5)
        assert first is not None
        assert first.claims == 1
        run = RunId("run-q")
        with PostgresEventStore(postgres_url, guard=Lease.of(first)) as as_a:
            as_a.append(run, 0, topics(2))
            assert queue.run_of("t-000") == run
            # Whether A is stale is judged by the taker's lease: judged by a long one, A's
            # holder is live however slowly the steps above ran on a loaded machine.
            assert queue.claim("B", 600) is None, "the lease still holds"
            time.sleep(0.6)
            second = queue.claim("B", 0.5)
            assert second is not None
            assert (second.worker, second.claims, second.run_id) == ("B", 2, run)
            with pytest.raises(LeaseLostError, match="no longer holds run t-000"):
                as_a.append(run, 2, topics(1, start=2))
        assert plain.head(run) == 2
        lease_a, lease_b = Lease.of(first), Lease.of(second)
        assert not queue.renew(lease_a)
        assert not queue.finish(lease_a, TicketState.DONE, "x")
        assert not queue.release(lease_a)
        assert queue.renew(lease_b)
        with PostgresEventStore(postgres_url, guard=lease_b) as as_b:
            assert as_b.append(run, 2, topics(3, start=2)) == 5
        assert queue.finish(lease_b, TicketState.DONE, "completed")
        done = queue.get("t-000")
        assert done is not None
        assert (done.state, done.outcome, done.worker) == (TicketState.DONE, "completed", "B")
        assert queue.claim("C", 30) is None


def test_a_released_ticket_is_claimed_at_once_and_resumes_its_run(postgres_url: str) -> None:
    """Released (a worker shutting down), the ticket is queued again with its run id, and
    the next claim takes it without waiting for a lease."""
    _queue(postgres_url, 1)
    with PostgresEventStore(postgres_url) as plain:
        queue = RunQueue(plain)
        claimed = queue.claim("A", 600)
        assert claimed is not None
        with PostgresEventStore(postgres_url, guard=Lease.of(claimed)) as as_a:
            as_a.append(RunId("run-r"), 0, topics(1))
        assert queue.release(Lease.of(claimed))
        back = queue.get("t-000")
        assert back is not None
        assert (back.state, back.worker, back.holder) == (TicketState.QUEUED, None, None)
        again = queue.claim("B", 600)
        assert again is not None
        assert (again.worker, again.run_id, again.claims) == ("B", "run-r", 2)


def test_one_run_per_workspace_at_a_time_unless_submitted_without_the_lock(
    postgres_url: str,
) -> None:
    """Two tickets of one workspace (procrastinate's lock): the second is not claimed while
    the first runs, and is once it ends; a ticket submitted without the lock (a run in a
    worktree of its own) runs beside them."""
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        queue.submit("t-a", Path("/ws/one"), "[chains]", "do it")
        queue.submit("t-b", Path("/ws/one"), "[chains]", "do it")
        queue.submit("t-c", Path("/ws/one"), "[chains]", "do it", lock=False)
        first = queue.claim("A", 600)
        beside = queue.claim("B", 600)
        assert (first and first.ticket, beside and beside.ticket) == ("t-a", "t-c")
        assert queue.claim("C", 600) is None, "t-b waits for t-a's workspace"
        assert first is not None
        assert queue.finish(Lease.of(first), TicketState.DONE, "completed")
        second = queue.claim("C", 600)
        assert second is not None
        assert second.ticket == "t-b"


def test_a_leased_append_still_checks_the_expected_sequence(postgres_url: str) -> None:
    """Holding the lease does not excuse a stale expected sequence."""
    _queue(postgres_url, 1)
    with PostgresEventStore(postgres_url) as plain:
        claimed = RunQueue(plain).claim("A", 600)
        assert claimed is not None
        with PostgresEventStore(postgres_url, guard=Lease.of(claimed)) as as_a:
            as_a.append(RunId("run-s"), 0, topics(2))
            with pytest.raises(SequenceConflictError):
                as_a.append(RunId("run-s"), 1, topics(1, start=9))


def test_finish_refuses_a_state_that_is_not_an_end(postgres_url: str) -> None:
    """A ticket ends done or failed; asking for another state is a programming error."""
    lease = Lease(ticket="t-x", job=1, holder=1)
    with (
        PostgresEventStore(postgres_url) as store,
        pytest.raises(ValueError, match="done or failed"),
    ):
        RunQueue(store).finish(lease, TicketState.QUEUED, "no")


def test_a_submitted_or_released_ticket_is_announced_once(postgres_url: str) -> None:
    """Submitting rings the bell (procrastinate's trigger; a retried submit of the same
    ticket does not); a release by the holder rings it, a release by anyone else does not."""
    bell = QueueBell(postgres_url)
    try:
        assert not bell.wait(0.2, lambda: False), "nothing announced yet"
        _queue(postgres_url, 1)
        assert bell.wait(5, lambda: False)
        with PostgresEventStore(postgres_url) as store:
            queue = RunQueue(store)
            queue.submit("t-000", Path("/ws/0"), "[chains]", "do it")  # a retry
            assert not bell.wait(0.3, lambda: False)
            claimed = queue.claim("w1", 60)
            assert claimed is not None
            assert not queue.release(Lease(ticket="t-000", job=claimed.job, holder=-1))
            assert not bell.wait(0.3, lambda: False)
            assert queue.release(Lease.of(claimed))
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
        assert time.monotonic() - began < 15  # not stopped, it would wait its 30 s
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
    ticket is never claimed, its worker can neither append, beat, finish nor release it,
    and an ended or unknown ticket cannot be cancelled."""
    _queue(postgres_url, 3)
    with PostgresEventStore(postgres_url) as plain:
        queue = RunQueue(plain)
        mine = queue.claim("A", 600)  # t-000
        assert mine is not None
        lease = Lease.of(mine)
        run = RunId("run-c")
        with PostgresEventStore(postgres_url, guard=lease) as as_a:
            as_a.append(run, 0, topics(2))
            was = queue.cancel("t-000", "not needed any more")
            assert was is not None
            assert (was.state, was.worker) == (TicketState.RUNNING, "A")
            with pytest.raises(LeaseLostError):
                as_a.append(run, 2, topics(1, start=2))
        assert plain.head(run) == 2
        assert not queue.renew(lease)
        assert not queue.finish(lease, TicketState.DONE, "x")
        assert not queue.release(lease)
        queued = queue.cancel("t-001")
        assert queued is not None
        assert (queued.state, queued.worker) == (TicketState.QUEUED, None)
        claimed = queue.claim("B", 600)
        assert claimed is not None
        assert claimed.ticket == "t-002", "cancelled tickets are skipped"
        assert queue.finish(Lease.of(claimed), TicketState.DONE, "completed")
        assert queue.cancel("t-002") is None, "ended already"
        assert queue.cancel("t-000") is None, "cancelled already"
        assert queue.cancel("t-nope") is None
        assert queue.claim("C", 0.01) is None, "a cancelled run is not taken over"
        ended = queue.get("t-000")
        assert ended is not None
        assert (ended.state, ended.outcome) == (TicketState.CANCELLED, "not needed any more")


def test_the_tickets_of_a_run_queue_table_move_to_procrastinate(postgres_url: str) -> None:
    """A store an older release left (``run_queue``, migrations 1-12) opened by this one: each
    ticket becomes a job in the state it had (a running one queued again, its run id kept, so
    the next claim resumes it; a queued one keeps its not_before), and run_queue is gone; a
    reader before that sees no tickets instead of failing."""
    with psycopg.connect(postgres_url) as conn:
        schema_at(conn, 12)
        conn.execute(
            "INSERT INTO run_queue (ticket, workspace, config, prompt, state, run_id, worker, "
            "claims, outcome, submitted_at, not_before) VALUES "
            "('t-1', '/ws/1', '[a]', 'p1', 'done', 'run-1', 'w', 1, 'completed', "
            "'2026-01-01T00:00:01Z', NULL), "
            "('t-2', '/ws/2', '[b]', 'p2', 'running', 'run-2', 'w', 1, NULL, "
            "'2026-01-01T00:00:02Z', NULL), "
            "('t-3', '/ws/3', '[c]', 'p3', 'queued', NULL, NULL, 0, NULL, "
            "'2026-01-01T00:00:03Z', '2099-01-01T00:00:00Z'), "
            "('t-4', '/ws/4', '[d]', 'p4', 'cancelled', NULL, NULL, 0, 'no', "
            "'2026-01-01T00:00:04Z', NULL)"
        )
    with PostgresEventStore(postgres_url, read_only=True) as reader:
        assert RunQueue(reader).tickets() == [], "a reader migrates nothing"
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        found = {t.ticket: t for t in queue.tickets()}
        assert [(t.ticket, t.state, t.run_id, t.outcome) for t in found.values()] == [
            ("t-1", "done", "run-1", "completed"),
            ("t-2", "queued", "run-2", None),
            ("t-3", "queued", None, None),
            ("t-4", "cancelled", None, "no"),
        ]
        assert (found["t-2"].workspace, found["t-2"].config, found["t-2"].prompt) == (
            "/ws/2",
            "[b]",
            "p2",
        )
        assert found["t-3"].not_before is not None
        assert found["t-3"].not_before.year == 2099
        resumed = queue.claim("new", 600)
        assert resumed is not None
        assert (resumed.ticket, resumed.run_id, resumed.claims) == ("t-2", "run-2", 2)
        assert queue.claim("new", 600) is None, "t-3 waits for its not_before"
        gone = store.retrying("look", lambda c: c.execute("SELECT to_regclass('run_queue')"))
        assert gone.fetchone() == (None,)
