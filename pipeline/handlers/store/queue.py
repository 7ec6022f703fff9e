"""The run queue in PostgreSQL (the optional extra ``postgres``): pipelines submitted for
workers to run, each a `procrastinate <https://procrastinate.readthedocs.io>`_ job.

procrastinate holds the queue: a ticket is a job of the queue :data:`QUEUE` (its arguments:
the ticket, the workspace, the configuration and the prompt), or of :data:`REMOTE_QUEUE` for a
remote ticket, whose run moves between hosts through a git remote (its arguments add the
remote, the base commit, the target branch and the run's branch; its setup files are kept in
``ticket_files``), fetched by one worker at a time
(``procrastinate_fetch_job_v2``, ``SKIP LOCKED``); its ``lock``, the workspace, keeps one run
per workspace at a time; a ticket given back until a provider's reset is retried with its
``scheduled_at`` (``procrastinate_retry_job_v2``); a cancel is procrastinate's abort
(``procrastinate_cancel_job_v1``); a submission is announced on procrastinate's ``NOTIFY``
channel by its own trigger. Each claim registers a procrastinate worker (the *holder*) whose
heartbeat the claiming worker keeps while it works; a claim first prunes the holders whose
heartbeat is older than its lease (``procrastinate_prune_stalled_workers_v1``) and retries
their jobs, so a dead or frozen worker's run is taken over a lease after its last heartbeat.
Times are the database's, so the workers' clocks need not agree.

ralph keeps in its own table ``tickets`` what a queue does not: the ticket's name, the run it
started, who claimed it and how often, and its outcome; and the fencing of appends: the event
store bound to a claim (:class:`Lease`, the store's append guard) refuses any append once the
job is no longer that holder's (taken over, cancelled), so two workers never both write one
run.

We call procrastinate's SQL functions on the store's own connection rather than run its
asyncio worker: a ralph worker runs one pipeline in its main thread, where the run's signals
are handled, and every queue step goes in the same transactions (and retries) as the store's.
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final, final

import orjson
import psycopg
from attrs import field, frozen
from psycopg import sql
from psycopg.rows import class_row

from pipeline.events import RunId
from pipeline.handlers.store._port import LeaseLostError
from pipeline.handlers.store.postgres import PostgresEventStore

__all__ = [
    "QUEUE",
    "REMOTE_QUEUE",
    "Lease",
    "QueueBell",
    "RemoteSpec",
    "RunQueue",
    "Ticket",
    "TicketState",
]

QUEUE: Final = "ralph"
"""The procrastinate queue that holds the tickets of a workspace's path (its task:
``ralph.ticket``), for workers that share the workspaces' volume."""

REMOTE_QUEUE: Final = "ralph-remote"
"""The queue of remote tickets, for workers with a folder of their own to clone into: a host
without the shared volume never fails a path ticket."""


@final
@frozen(kw_only=True)
class RemoteSpec:
    """Where a remote ticket's run lives, as its job records it: the remote, the commit it
    starts from, the branch it lands on, and its own branch there (made and checked by
    ``pipeline.app.workers``' ``remote_spec``)."""

    url: str
    base: str
    """The commit the run starts from (the submitter's HEAD, which the remote holds)."""
    target: str
    """The branch the run lands on (the submitter's current branch)."""
    branch: str
    """The run's branch on the remote: ``ralph/run-<ticket>``."""


class TicketState(enum.StrEnum):
    """Where a submitted pipeline stands."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    """The run stopped with a termination reason (a success or not: see ``outcome``)."""
    FAILED = "failed"
    """The run could not be run (bad configuration, missing workspace, a bug): see ``outcome``."""
    CANCELLED = "cancelled"
    """Cancelled before it finished (see :meth:`RunQueue.cancel`); no worker runs it again."""


@final
@frozen(kw_only=True)
class Ticket:
    """A submitted pipeline: what to run, and who runs it now."""

    ticket: str
    workspace: str
    config: str
    prompt: str
    state: TicketState = field(converter=TicketState)
    run_id: str | None
    worker: str | None
    """The name of the worker that claimed it last (None while it is queued)."""
    claims: int
    outcome: str | None
    submitted_at: datetime
    updated_at: datetime
    not_before: datetime | None = None
    """When a ticket given back while its run waits for a provider's reset may be claimed."""
    job: int
    """Its procrastinate job's id."""
    holder: int | None = None
    """The procrastinate worker that holds the job while it runs (one per claim)."""
    remote: str | None = None
    """A remote ticket's git remote (None: a path ticket, run in ``workspace``)."""
    base: str | None = None
    """A remote ticket's first commit, which the remote held when it was submitted."""
    target: str | None = None
    """The branch a remote ticket's run lands on."""
    branch: str | None = None
    """A remote ticket's own branch on the remote (``ralph/run-<ticket>``)."""
    host: str | None = None
    """The host of the worker that claimed it last."""
    pushed: str | None = None
    """The last commit a remote ticket's worker pushed to its branch."""

    @property
    def cancellable(self) -> bool:
        """Whether :meth:`RunQueue.cancel` can still cancel it."""
        return self.state in (TicketState.QUEUED, TicketState.RUNNING)


_SELECT: Final = f"""
    SELECT t.ticket, j.args->>'workspace' AS workspace, j.args->>'config' AS config,
        j.args->>'prompt' AS prompt,
        CASE WHEN j.abort_requested OR j.status IN ('cancelled', 'aborted') THEN 'cancelled'
             WHEN j.status = 'todo' THEN 'queued' WHEN j.status = 'doing' THEN 'running'
             WHEN j.status = 'succeeded' THEN 'done' ELSE 'failed' END AS state,
        t.run_id, CASE WHEN j.status = 'todo' THEN NULL ELSE t.worker END AS worker, t.claims,
        t.outcome, t.submitted_at, t.updated_at,
        CASE WHEN j.status = 'todo' THEN j.scheduled_at END AS not_before,
        j.id AS job, j.worker_id AS holder, j.args->>'remote' AS remote,
        j.args->>'base' AS base, j.args->>'target' AS target, j.args->>'branch' AS branch,
        t.host, t.pushed
    FROM tickets AS t JOIN procrastinate_jobs AS j ON j.id = t.job_id
        AND j.queue_name IN ('{QUEUE}', '{REMOTE_QUEUE}')
"""
"""A ticket as the person sees it: procrastinate's job status said in the queue's words (a
job whose abort was requested is cancelled, though its worker may still be stopping it)."""

_HELD: Final = (
    "SELECT 1 FROM procrastinate_jobs WHERE id = %(lease_job)s "
    "AND worker_id = %(lease_holder)s AND status = 'doing' AND NOT abort_requested"
)
"""Whether the lease's holder still holds its job (neither taken over nor cancelled)."""


@final
@frozen(kw_only=True)
class Lease:
    """The claim a worker holds on a queued run, as the guard of its event store: an append
    goes on only while the run's job is still this claim's holder's, running and not
    cancelled, and the append that starts the run records the run's id in the ticket (a
    worker taking over knows what to resume). Bind it with
    ``PostgresEventStore(url, guard=Lease.of(ticket))``."""

    ticket: str
    job: int
    holder: int

    condition: ClassVar[str] = f"EXISTS ({_HELD} FOR SHARE)"
    """The lease's condition in the one-statement append (the job's row locked for it, so a
    takeover, which clears the row's worker, waits for the append or is seen by it)."""

    @classmethod
    def of(cls, ticket: Ticket) -> Lease:
        """The lease of a claimed ticket."""
        if ticket.holder is None:
            raise ValueError(f"{ticket.ticket} is not claimed")
        return cls(ticket=ticket.ticket, job=ticket.job, holder=ticket.holder)

    def parameters(self) -> dict[str, Any]:
        """The condition's parameters: this lease's job and holder."""
        return {"lease_job": self.job, "lease_holder": self.holder}

    def check(
        self, conn: psycopg.Connection[Any], label: str, run_id: RunId, *, starting: bool
    ) -> None:
        """Lock the run's job row (a takeover waits for this append, or this append sees
        the takeover) and check it is still ours; a starting append records the run's id."""
        if conn.execute(f"{_HELD} FOR SHARE", self.parameters()).fetchone() is None:
            raise LeaseLostError(
                f"{label}: this worker no longer holds run {self.ticket} (taken over or "
                "cancelled); nothing was written"
            )
        if starting:
            conn.execute(
                "UPDATE tickets SET run_id = %s, updated_at = now() WHERE ticket = %s",
                (run_id, self.ticket),
            )


class RunQueue:
    """The queue in the store's database (its migrations create procrastinate's schema and
    the ``tickets`` table).

    Every call is one transaction, retried like the store's on a lost connection.
    """

    def __init__(self, store: PostgresEventStore) -> None:
        self.store = store

    def submit(
        self,
        ticket: str,
        workspace: Path,
        config: str,
        prompt: str,
        *,
        lock: bool = True,
        remote: RemoteSpec | None = None,
        files: Mapping[str, bytes] | None = None,
    ) -> Ticket:
        """Queue a pipeline run: the workspace it runs in, the ``ralph.toml`` text and the
        prompt text it runs with (what was submitted is what runs). ``lock`` (the job's
        procrastinate lock, the workspace) keeps it from running while another run works in
        the same workspace; a run in a worktree of its own goes without. A ``remote`` ticket
        (:data:`REMOTE_QUEUE`, never locked) runs in a clone of its remote on a worker's host,
        set up with ``files`` (``workspace`` is only where it was submitted from)."""
        args = {"ticket": ticket, "workspace": str(workspace), "config": config, "prompt": prompt}
        queue, lock_key = QUEUE, str(workspace) if lock else None
        if remote is not None:
            queue, lock_key = REMOTE_QUEUE, None
            args |= {"remote": remote.url, "base": remote.base, "target": remote.target}
            args["branch"] = remote.branch

        def work(conn: psycopg.Connection[Any]) -> None:
            with conn.transaction():
                # A retry after a lost answer finds the ticket it inserted.
                found = conn.execute("SELECT 1 FROM tickets WHERE ticket = %s", (ticket,))
                if found.fetchone() is not None:
                    return
                conn.execute(
                    "INSERT INTO tickets (ticket, job_id) SELECT %s, job FROM unnest("
                    "procrastinate_defer_jobs_v1(ARRAY[ROW(%s, 'ralph.ticket', 0, %s, NULL, "
                    "%s::jsonb, NULL)::procrastinate_job_to_defer_v1])) AS job",
                    (ticket, queue, lock_key, orjson.dumps(args).decode()),
                )
                with conn.cursor() as cursor:
                    cursor.executemany(
                        "INSERT INTO ticket_files (ticket, path, body, carried) "
                        "VALUES (%s, %s, %s, false)",
                        [(ticket, path, body) for path, body in (files or {}).items()],
                    )

        self.store.retrying("submit a run", work)
        found = self.get(ticket)
        assert found is not None
        return found

    def claim(
        self,
        worker: str,
        lease_s: float,
        *,
        queues: tuple[str, ...] = (QUEUE,),
        host: str | None = None,
    ) -> Ticket | None:
        """The oldest claimable ticket of ``queues``, now running under a new holder that
        ``worker`` (on ``host``) keeps alive (:meth:`renew`) at least every ``lease_s``
        seconds, or None. Workers claiming at once each get a different ticket. First, the
        jobs of those queues whose holders were silent for ``lease_s`` go back to the queue
        (the run of a cancelled one ends cancelled)."""

        def work(conn: psycopg.Connection[Any]) -> Ticket | None:
            with conn.transaction():
                conn.execute("SELECT procrastinate_prune_stalled_workers_v1(%s)", (lease_s,))
                conn.execute(
                    "SELECT procrastinate_retry_job_v2(id, NULL, NULL, NULL, NULL) FROM ("
                    "SELECT id FROM procrastinate_jobs WHERE queue_name = ANY(%s) "
                    "AND status = 'doing' AND worker_id IS NULL FOR UPDATE SKIP LOCKED) AS stalled",
                    (list(queues),),
                )
                # One transaction: a stalled job this claim takes is never seen queued.
                holder = conn.execute("SELECT procrastinate_register_worker_v1()").fetchone()
                assert holder is not None
                fetched = conn.execute(
                    "SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], %s)",
                    (list(queues), holder[0]),
                ).fetchone()
                if fetched is None or fetched[0] is None:
                    # Nothing to claim: no holder either.
                    conn.execute("SELECT procrastinate_unregister_worker_v1(%s)", holder)
                    return None
                conn.execute(
                    "UPDATE tickets SET worker = %s, host = %s, claims = claims + 1, "
                    "updated_at = now() WHERE job_id = %s",
                    (worker, host, fetched[0]),
                )
                return _one(conn, "j.id = %s", (fetched[0],))

        return self.store.retrying("claim a run", work)

    def renew(self, lease: Lease) -> bool:
        """The holder's heartbeat; False when it no longer holds its job (its holder was
        pruned as stalled and the job taken over, or the job was cancelled)."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            conn.execute(
                "UPDATE procrastinate_workers SET last_heartbeat = now() WHERE id = %s",
                (lease.holder,),
            )
            return conn.execute(_HELD, lease.parameters()).fetchone() is not None

        return self.store.retrying("renew a lease", work)

    def release(self, lease: Lease, not_before: datetime | None = None) -> bool:
        """Give the lease's ticket back to the queue (a worker shutting down, or a run
        waiting for a provider's reset): the next claim resumes it, at once or from
        ``not_before``. False when the lease no longer held it."""
        return self._settle(
            "release a run",
            lease,
            # procrastinate announces only new jobs; a ticket given back for now is
            # announced the same way, so an idle worker takes it at once.
            [
                "SELECT procrastinate_retry_job_v2(%(lease_job)s, %(not_before)s, NULL, NULL, "
                "NULL), CASE WHEN %(not_before)s::timestamptz IS NULL THEN pg_notify("
                "'procrastinate_queue_v1#' || (SELECT queue_name FROM procrastinate_jobs "
                "WHERE id = %(lease_job)s), json_build_object('type', 'job_inserted', "
                "'job_id', %(lease_job)s)::text) END"
            ],
            {"not_before": not_before},
        )

    def finish(self, lease: Lease, state: TicketState, outcome: str) -> bool:
        """Record that the lease's holder finished its ticket (``DONE`` or ``FAILED``, and
        why); False when it no longer held it, and nothing changes."""
        if state not in (TicketState.DONE, TicketState.FAILED):
            raise ValueError(f"a ticket finishes done or failed, not {state.value}")
        return self._settle(
            "finish a run",
            lease,
            [
                "SELECT procrastinate_finish_job_v1(%(lease_job)s, "
                "%(end)s::procrastinate_job_status, false)",
                "UPDATE tickets SET outcome = %(outcome)s WHERE job_id = %(lease_job)s",
            ],
            {"end": "succeeded" if state is TicketState.DONE else "failed", "outcome": outcome},
        )

    def note_pushed(self, lease: Lease, sha: str) -> bool:
        """Record ``sha`` as the last commit the lease's worker pushed to its ticket's branch;
        False, and nothing recorded, once the lease no longer holds the ticket."""
        return self._while_held(
            "record a push",
            lease,
            "UPDATE tickets SET pushed = %(sha)s, updated_at = now() "
            f"WHERE ticket = %(ticket)s AND EXISTS ({_HELD} FOR UPDATE)",
            {"sha": sha},
        )

    def carry(self, lease: Lease, path: str, body: bytes) -> bool:
        """Keep ``body`` as the file ``path`` of the lease's run (its plan or its issues),
        for a worker that takes the run over on another host; False, and nothing kept, once
        the lease no longer holds the ticket."""
        return self._while_held(
            "keep a run's file",
            lease,
            "INSERT INTO ticket_files (ticket, path, body, carried) "
            "SELECT %(ticket)s, %(path)s, %(body)s, true "
            f"WHERE EXISTS ({_HELD} FOR UPDATE) "
            "ON CONFLICT (ticket, path) DO UPDATE SET body = excluded.body, carried = true",
            {"path": path, "body": body},
        )

    def _while_held(
        self, action: str, lease: Lease, statement: str, params: dict[str, Any]
    ) -> bool:
        """Run the one-row ``statement`` (its condition the lease's, ``%(ticket)s`` the
        lease's ticket); whether it wrote its row, which it does only while the lease holds."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            values = {**lease.parameters(), "ticket": lease.ticket, **params}
            return conn.execute(statement, values).rowcount == 1

        return self.store.retrying(action, work)

    def files(self, ticket: str, *, carried: bool = False) -> dict[str, bytes]:
        """The setup files ``ticket`` was submitted with (``carried``: its run's carried
        files instead), by path."""

        def work(conn: psycopg.Connection[Any]) -> dict[str, bytes]:
            rows = conn.execute(
                "SELECT path, body FROM ticket_files WHERE ticket = %s AND carried = %s "
                "ORDER BY path",
                (ticket, carried),
            )
            return {path: bytes(body) for path, body in rows}

        return self.store.retrying("read a ticket's files", work)

    def _settle(
        self, action: str, lease: Lease, statements: list[str], params: dict[str, Any]
    ) -> bool:
        """Run ``statements`` on the lease's job if the lease still holds it; either way,
        let its holder go."""

        def work(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                held = conn.execute(f"{_HELD} FOR UPDATE", lease.parameters()).fetchone()
                if held is not None:
                    for statement in statements:
                        conn.execute(statement, {**lease.parameters(), **params})
                    conn.execute(
                        "UPDATE tickets SET updated_at = now() WHERE job_id = %s", (lease.job,)
                    )
                conn.execute("SELECT procrastinate_unregister_worker_v1(%s)", (lease.holder,))
                return held is not None

        return self.store.retrying(action, work)

    def cancel(self, ticket: str, why: str = "cancelled") -> Ticket | None:
        """Cancel ``ticket`` if it is queued or running (``why`` becomes its outcome); the
        ticket as it was just before (its state, the worker running it), or None when it is
        unknown or had already ended.

        A queued ticket is never claimed. A running ticket's job is aborted (procrastinate's
        ``abort_requested``): its worker's appends are refused at once, and its heartbeat,
        refused, interrupts the run (and stops the agent) at the next beat.
        """

        def work(conn: psycopg.Connection[Any]) -> Ticket | None:
            with conn.transaction():
                before = _one(conn, "t.ticket = %s FOR UPDATE OF j", (ticket,))
                if before is None or not before.cancellable:
                    return None
                conn.execute("SELECT procrastinate_cancel_job_v1(%s, true, false)", (before.job,))
                conn.execute(
                    "UPDATE tickets SET outcome = %s, updated_at = now() WHERE ticket = %s",
                    (why, ticket),
                )
                return before

        return self.store.retrying("cancel a run", work)

    def get(self, ticket: str) -> Ticket | None:
        """The ticket, or None."""
        return self.store.retrying(
            "read a ticket", lambda conn: _one(conn, "t.ticket = %s", (ticket,))
        )

    def tickets(self) -> list[Ticket]:
        """Every ticket, oldest first (none in a store an older release left, which a reader
        does not migrate: its queue moves here when a writer of this release opens it)."""

        def work(conn: psycopg.Connection[Any]) -> list[Ticket]:
            if conn.execute("SELECT to_regclass('tickets')").fetchone() == (None,):
                return []
            with conn.cursor(row_factory=class_row(Ticket)) as cursor:
                cursor.execute(f"{_SELECT} ORDER BY t.submitted_at, j.id")
                return cursor.fetchall()

        return self.store.retrying("list the queue", work)

    def run_of(self, ticket: str) -> RunId | None:
        """The id of the run the ticket started, once its first events are stored."""
        found = self.get(ticket)
        return None if found is None or found.run_id is None else RunId(found.run_id)


def _one(conn: psycopg.Connection[Any], where: str, params: Any) -> Ticket | None:
    with conn.cursor(row_factory=class_row(Ticket)) as cursor:
        cursor.execute(f"{_SELECT} WHERE {where}", params)
        return cursor.fetchone()


class QueueBell:
    """Wakes an idle worker when a ticket of ``queues`` becomes claimable: a connection of
    its own that ``LISTEN``s on procrastinate's channel of each queue.

    Best effort by design: a bell that cannot connect, or whose connection is lost, waits the
    whole time asked (as plain polling does) and tries to listen again on the next wait.
    """

    def __init__(self, url: str, queues: tuple[str, ...] = (QUEUE,)) -> None:
        self.url = url
        self.queues = queues
        self._conn: psycopg.Connection[Any] | None = None

    def wait(self, seconds: float, stopping: Callable[[], bool], tick: float = 0.05) -> bool:
        """Wait up to ``seconds`` for an announcement (True) or until ``stopping()`` says so
        (looked at every ``tick`` seconds); False when none came."""
        deadline = time.monotonic() + seconds
        conn = self._listening()
        while not stopping():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if conn is None:
                time.sleep(min(tick, left))
                continue
            try:
                for _ in conn.notifies(timeout=min(tick, left), stop_after=1):
                    return True
            except psycopg.Error:
                self.close()  # listen again on the next wait; meanwhile, poll
                conn = None
        return False

    def _listening(self) -> psycopg.Connection[Any] | None:
        if self._conn is not None and not self._conn.closed and not self._conn.broken:
            return self._conn
        self.close()
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=5)
            for queue in self.queues:  # procrastinate's channel, where a new job is announced
                channel = sql.Identifier(f"procrastinate_queue_v1#{queue}")
                conn.execute(sql.SQL("LISTEN {}").format(channel))
        except psycopg.Error:
            return None
        self._conn = conn
        return conn

    def close(self) -> None:
        """Stop listening (the next wait listens again)."""
        if self._conn is not None:
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            self._conn = None
