"""The run queue in PostgreSQL (the optional extra ``postgres``): pipelines submitted for
workers to run, claimed with ``SELECT ... FOR UPDATE SKIP LOCKED`` and held by a lease.

A ticket moves ``queued -> running -> done | failed``, and to ``cancelled`` from queued or
running when someone cancels it. A claim takes the oldest ticket that is
queued, or running under a lease that has expired (its worker died or stalled), and hands it
to the claiming worker for ``lease_s`` seconds, which the worker renews while it works. The
event store bound to that lease (:class:`Lease`, the store's append guard) refuses any
append once another worker holds the ticket, so two workers never both write one run. Times
are the database's, so the workers' clocks need not agree.

A ticket that becomes claimable at once (submitted, or released by a worker shutting down) is
announced on the ``NOTIFY`` channel :data:`CHANNEL`; an idle worker waits on it
(:class:`QueueBell`) instead of only polling. A lease that expires is not announced: polling
finds it.
"""

from __future__ import annotations

import contextlib
import enum
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final, final

import psycopg
from attrs import frozen
from psycopg.rows import class_row

from pipeline.events import RunId
from pipeline.handlers.store._port import LeaseLostError
from pipeline.handlers.store.postgres import PostgresEventStore

__all__ = ["CHANNEL", "Lease", "QueueBell", "RunQueue", "Ticket", "TicketState"]

CHANNEL: Final = "ralph_run_queue"
"""The ``NOTIFY`` channel on which a claimable ticket is announced (payload: the ticket)."""


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
    state: str
    run_id: str | None
    worker: str | None
    lease_expires: datetime | None
    claims: int
    outcome: str | None
    submitted_at: datetime
    updated_at: datetime
    not_before: datetime | None = None
    """When a ticket given back while its run waits for a provider's reset may be claimed."""

    @property
    def status(self) -> TicketState:
        """``state`` as a :class:`TicketState`."""
        return TicketState(self.state)

    @property
    def cancellable(self) -> bool:
        """Whether :meth:`RunQueue.cancel` can still cancel it."""
        return self.status in _CANCELLABLE


_CANCELLABLE: Final = (TicketState.QUEUED, TicketState.RUNNING)
"""The states a ticket can be cancelled in."""

_CANCELLABLE_SQL: Final = "(" + ", ".join(f"'{state.value}'" for state in _CANCELLABLE) + ")"

_COLUMNS: Final = (
    "ticket, workspace, config, prompt, state, run_id, worker, lease_expires, claims, "
    "outcome, submitted_at, updated_at, not_before"
)
_OLD_COLUMNS: Final = ", ".join(f"old.{column.strip()}" for column in _COLUMNS.split(","))


@final
@frozen(kw_only=True)
class Lease:
    """The claim a worker holds on a queued run, as the guard of its event store: an append
    goes on only while the run's queue row is still this worker's and running, and the append
    that starts the run records the run's id there (a worker taking over knows what to
    resume). Bind it with ``PostgresEventStore(url, guard=Lease(ticket=ticket, worker=worker))``."""

    ticket: str
    worker: str

    condition: ClassVar[str] = (
        "EXISTS (SELECT 1 FROM run_queue WHERE ticket = %(lease_ticket)s "
        "AND worker = %(lease_worker)s AND state = 'running' FOR SHARE)"
    )
    """The lease's condition in the one-statement append (the queue row locked for it)."""

    def parameters(self) -> dict[str, Any]:
        """The condition's parameters: this lease's ticket and worker."""
        return {"lease_ticket": self.ticket, "lease_worker": self.worker}

    def check(
        self, conn: psycopg.Connection[Any], label: str, run_id: RunId, *, starting: bool
    ) -> None:
        """Lock the run's queue row (a takeover waits for this append, or this append sees
        the takeover) and check it is still ours; a starting append records the run's id."""
        row = conn.execute(
            "SELECT worker, state FROM run_queue WHERE ticket = %s FOR SHARE", (self.ticket,)
        ).fetchone()
        if row is None or row[0] != self.worker or row[1] != "running":
            holder = "nobody" if row is None or row[0] is None else f"worker {row[0]}"
            raise LeaseLostError(
                f"{label}: worker {self.worker} no longer holds run {self.ticket} "
                f"(now held by {holder}); nothing was written"
            )
        if starting:
            conn.execute(
                "UPDATE run_queue SET run_id = %s, updated_at = now() WHERE ticket = %s",
                (run_id, self.ticket),
            )


class RunQueue:
    """The queue in the store's database (its migrations create the table).

    Every call is one statement, retried like the store's on a lost connection.
    """

    def __init__(self, store: PostgresEventStore) -> None:
        self.store = store

    def submit(self, ticket: str, workspace: Path, config: str, prompt: str) -> Ticket:
        """Queue a pipeline run: the workspace it runs in, the ``ralph.toml`` text and the
        prompt text it runs with (what was submitted is what runs)."""
        # A retry after a lost answer finds the ticket it inserted.
        # The announcement is sent when the insert commits (the statement's own transaction).
        inserted = self._maybe(
            "submit a run",
            f"WITH inserted AS (INSERT INTO run_queue (ticket, workspace, config, prompt, state) "
            f"VALUES (%s, %s, %s, %s, 'queued') ON CONFLICT (ticket) DO NOTHING "
            f"RETURNING {_COLUMNS}) "
            f"SELECT inserted.* FROM inserted, LATERAL pg_notify('{CHANNEL}', inserted.ticket)",
            (ticket, str(workspace), config, prompt),
        )
        found = inserted or self.get(ticket)
        assert found is not None
        return found

    def claim(self, worker: str, lease_s: float) -> Ticket | None:
        """The oldest claimable ticket, now running under ``worker``'s lease for ``lease_s``
        seconds, or None. Workers claiming at once each get a different ticket."""
        return self._maybe(
            "claim a run",
            "UPDATE run_queue SET state = 'running', worker = %(worker)s, "
            "lease_expires = now() + make_interval(secs => %(lease)s), claims = claims + 1, "
            "not_before = NULL, updated_at = now() WHERE ticket = ("
            "  SELECT ticket FROM run_queue"
            "  WHERE (state = 'queued' AND (not_before IS NULL OR not_before <= now()))"
            "  OR (state = 'running' AND lease_expires < now())"
            "  ORDER BY submitted_at, ticket FOR UPDATE SKIP LOCKED LIMIT 1"
            f") RETURNING {_COLUMNS}",
            {"worker": worker, "lease": lease_s},
        )

    def renew(self, ticket: str, worker: str, lease_s: float) -> bool:
        """Extend ``worker``'s lease on ``ticket``; False when it no longer holds it."""
        return self._changed(
            "renew a lease",
            "UPDATE run_queue SET lease_expires = now() + make_interval(secs => %s), "
            "updated_at = now() WHERE ticket = %s AND worker = %s AND state = 'running'",
            (lease_s, ticket, worker),
        )

    def release(self, ticket: str, worker: str, not_before: datetime | None = None) -> bool:
        """Give ``ticket`` back to the queue (a worker shutting down, or a run waiting for a
        provider's reset): the next claim resumes it, at once or from ``not_before``. False
        when ``worker`` no longer held it."""
        return self._changed(
            "release a run",
            "WITH released AS (UPDATE run_queue SET state = 'queued', worker = NULL, "
            "lease_expires = NULL, not_before = %s, updated_at = now() "
            "WHERE ticket = %s AND worker = %s AND state = 'running' RETURNING ticket) "
            f"SELECT pg_notify('{CHANNEL}', ticket) FROM released",
            (not_before, ticket, worker),
        )

    def finish(self, ticket: str, worker: str, state: TicketState, outcome: str) -> bool:
        """Record that ``worker`` finished ``ticket`` (``DONE`` or ``FAILED``, and why); False
        when it no longer held it, and nothing changes."""
        if state not in (TicketState.DONE, TicketState.FAILED):
            raise ValueError(f"a ticket finishes done or failed, not {state.value}")
        return self._changed(
            "finish a run",
            "UPDATE run_queue SET state = %s, outcome = %s, lease_expires = NULL, "
            "updated_at = now() WHERE ticket = %s AND worker = %s AND state = 'running'",
            (state.value, outcome, ticket, worker),
        )

    def cancel(self, ticket: str, why: str = "cancelled") -> Ticket | None:
        """Cancel ``ticket`` if it is queued or running (``why`` becomes its outcome); the
        ticket as it was just before (its state, the worker running it), or None when it is
        unknown or had already ended.

        A running ticket's worker loses its lease at once: its appends are refused, and its
        lease keeper interrupts the run (and stops the agent) at the next renewal.
        """
        return self._maybe(
            "cancel a run",
            "UPDATE run_queue AS q SET state = 'cancelled', outcome = %s, lease_expires = NULL, "
            "updated_at = now() "
            "FROM (SELECT * FROM run_queue WHERE ticket = %s FOR UPDATE) AS old "
            f"WHERE q.ticket = old.ticket AND old.state IN {_CANCELLABLE_SQL} "
            f"RETURNING {_OLD_COLUMNS}",
            (why, ticket),
        )

    def get(self, ticket: str) -> Ticket | None:
        """The ticket, or None."""
        return self._maybe(
            "read a ticket", f"SELECT {_COLUMNS} FROM run_queue WHERE ticket = %s", (ticket,)
        )

    def tickets(self) -> list[Ticket]:
        """Every ticket, oldest first."""

        def work(conn: psycopg.Connection[Any]) -> list[Ticket]:
            with conn.cursor(row_factory=class_row(Ticket)) as cursor:
                cursor.execute(f"SELECT {_COLUMNS} FROM run_queue ORDER BY submitted_at, ticket")
                return cursor.fetchall()

        return self.store.retrying("list the queue", work)

    def run_of(self, ticket: str) -> RunId | None:
        """The id of the run the ticket started, once its first events are stored."""
        found = self.get(ticket)
        return None if found is None or found.run_id is None else RunId(found.run_id)

    def _maybe(self, action: str, sql: str, params: Any) -> Ticket | None:
        def work(conn: psycopg.Connection[Any]) -> Ticket | None:
            with conn.cursor(row_factory=class_row(Ticket)) as cursor:
                cursor.execute(sql, params)
                return cursor.fetchone()

        return self.store.retrying(action, work)

    def _changed(self, action: str, sql: str, params: Any) -> bool:
        def work(conn: psycopg.Connection[Any]) -> bool:
            return conn.execute(sql, params).rowcount == 1

        return self.store.retrying(action, work)


class QueueBell:
    """Wakes an idle worker when a ticket becomes claimable: a connection of its own that
    ``LISTEN``s on :data:`CHANNEL`.

    Best effort by design: a bell that cannot connect, or whose connection is lost, waits the
    whole time asked (as plain polling does) and tries to listen again on the next wait.
    """

    def __init__(self, url: str) -> None:
        self.url = url
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
            conn.execute(f"LISTEN {CHANNEL}")
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
