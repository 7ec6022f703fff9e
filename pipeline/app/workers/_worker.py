"""A worker: claims submitted pipelines from the PostgreSQL queue (procrastinate's jobs) and
runs each one with the same runtime as ``ralph run``, holding a lease whose heartbeat it keeps
while it works (I/O).

One worker runs one pipeline at a time (``ralph worker --concurrency N`` starts N of them as
processes). A worker with a folder of its own (``--workdir``) runs the remote tickets instead of
the path ones: each in a repository of the ticket's branch in that folder, each commit pushed
to the remote before its fact is appended, so that any worker can take the run over.

A worker that dies stops beating; a lease after its last heartbeat, the next claim resumes the
run from its last checkpoint and event tail. On SIGTERM or SIGINT the run at work
is interrupted cleanly (its checkpoint saved) and its ticket released to the queue at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType

import attrs
from attrs import define, frozen

from pipeline import PipelineError
from pipeline.app.workers._landing import land_ticket
from pipeline.app.workers._lease import LEASE_LOST, LeaseKeeper
from pipeline.app.workers._publishing import PublishingStore
from pipeline.app.workers._remote import remote_url
from pipeline.app.workers._remote_run import RemoteRun, RemoteUnreachableError, cache_for
from pipeline.app.workers._ticket_repo import (
    Restored,
    TicketBusyError,
    head_effect,
    ticket_repository,
    ticket_turn,
)
from pipeline.app.workspace import (
    HalfMadeError,
    Workspace,
    drive,
    hiding_workdir,
    open_workspace,
    pending_commit,
    ticket_worktree,
    write_setup,
)
from pipeline.core.config import ConfigError, Durability, parse_config
from pipeline.core.state import Phase
from pipeline.engine import Interruption, Observers, RunObserver, TracingObserver, load_state
from pipeline.events import Instant, RunId
from pipeline.handlers import EffectTracer
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.runtime import PromptSource, global_config_secrets
from pipeline.handlers.store import EventStore, LeaseLostError, StoreError
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import (
    QUEUE,
    REMOTE_QUEUE,
    Lease,
    QueueBell,
    RunQueue,
    Ticket,
    TicketState,
)

__all__ = ["TicketTracing", "Worker", "WorkerReport", "worker_name"]

TicketTracing = Callable[[Ticket], AbstractContextManager[EffectTracer | None]]
"""Opens the tracing of one ticket's run and gives its tracer (for example a span per ticket
parenting the run's effect spans; see ``ralph worker --otel``)."""


def worker_name() -> str:
    """A name unique to this worker process: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class _Said(RunObserver):
    """A ticket run's warnings, said by the worker (``say``)."""

    __slots__ = ("_say",)

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say

    def warning(self, message: str, /) -> None:
        """Say it."""
        self._say(message)


@define(kw_only=True)
class WorkerReport:
    """What a worker did before it stopped."""

    claimed: int = 0
    done: int = 0
    failed: int = 0
    released: int = 0
    """Tickets given back to the queue when the worker was asked to stop, or while their
    runs wait for a provider limit's reset."""
    lost: int = 0
    """Tickets another worker took over (this one stalled past its lease)."""
    cancelled: int = 0
    """Tickets cancelled while this worker ran them (their runs were stopped)."""


@frozen(kw_only=True)
class _Outcome:
    state: TicketState | None
    """DONE or FAILED to record; None: released, lost or cancelled, not ours to finish."""
    detail: str
    release: bool = False
    """The run was interrupted on request: give the ticket back to the queue."""
    not_before: datetime | None = None
    """The run waits for a provider limit's reset: the ticket is claimable from then."""


class Worker:
    """Claims and runs queued pipelines from the store at ``url`` until stopped.

    ``lease_s`` is how long a claim lasts without a heartbeat (a dead worker's runs are taken
    over that long after its last one: procrastinate's stalled-worker timeout, which a worker
    applies to the others' claims, so a fleet's workers share one); ``poll_s`` how long an
    idle worker waits before looking again, unless a ticket submitted or released meanwhile
    wakes it at once. A ticket claimed more than ``max_claims`` times (its workers keep dying
    on it) is marked failed instead of run again. ``on_message`` receives one line per thing
    worth telling an operator; ``traced``, when given, the tracer of each ticket's run (see
    :data:`TicketTracing`). With ``workdir``, a folder of this host's that its workers share
    (their turns on a ticket kept apart by file locks), it claims the remote tickets only
    (:data:`~pipeline.handlers.store.queue.REMOTE_QUEUE`); without, the path tickets only.
    """

    def __init__(
        self,
        url: str,
        *,
        name: str | None = None,
        lease_s: float = 30.0,
        poll_s: float = 1.0,
        max_claims: int = 5,
        on_message: Callable[[str], None] | None = None,
        traced: TicketTracing | None = None,
        workdir: Path | None = None,
    ) -> None:
        if lease_s <= 0 or poll_s <= 0 or max_claims < 1:
            raise ValueError("lease_s and poll_s must be positive, max_claims at least 1")
        self.url = url
        self.name = name or worker_name()
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.max_claims = max_claims
        self.stopping: str | None = None
        self._tell = on_message or (lambda _line: None)
        self._traced = traced
        self.workdir = workdir
        self.queues = (QUEUE,) if workdir is None else (REMOTE_QUEUE,)
        self._current: Interruption | None = None
        self._signals = threading.current_thread() is threading.main_thread()
        # An outcome quotes errors, and is stored in the queue the whole team reads; the
        # worker's lines go to logs.
        self._redactor = Redactor.from_environment(os.environ)

    def _say(self, line: str) -> None:
        self._tell(self._redactor.text(line))

    def stop(self, reason: str) -> None:
        """Ask the worker to stop: the run at work is interrupted (and its ticket released),
        no new ticket is claimed. Safe to call from a signal handler."""
        if self.stopping is None:
            self.stopping = reason
        if self._current is not None:
            self._current.request(reason)

    def run(self, *, exit_when_idle: bool = False, max_runs: int | None = None) -> WorkerReport:
        """Claim and run tickets until stopped (or, with ``exit_when_idle``, until the queue
        has nothing to claim; with ``max_runs``, after that many claims)."""
        report = WorkerReport()
        delay = self.poll_s
        bell = QueueBell(self.url, self.queues)
        with (
            self._handling_signals(),
            PostgresEventStore(self.url) as store,
            contextlib.closing(bell),
        ):
            queue = RunQueue(store)
            self._say(f"worker {self.name} polling {store.label}")
            if workdir := self.workdir:
                self._say(f"remote tickets only, in {workdir}")
                # The sandbox shows git's global configuration to agents, read-only.
                for secret in global_config_secrets(os.environ):
                    self._say(f"warning: {secret}; agents can read it")
            while self.stopping is None and (max_runs is None or report.claimed < max_runs):
                try:
                    ticket = queue.claim(
                        self.name, self.lease_s, queues=self.queues, host=socket.gethostname()
                    )
                except StoreError as error:
                    # Unreachable for the store's whole retry period: wait longer each time.
                    self._say(f"cannot claim: {error}; retrying in {delay:g} s")
                    self._sleep(delay)
                    delay = min(delay * 2, 30.0)
                    continue
                delay = self.poll_s
                if ticket is None:
                    if exit_when_idle:
                        break
                    # A submitted or released ticket rings the bell; an expired lease does
                    # not, and is found by looking again after poll_s.
                    bell.wait(self.poll_s, lambda: self.stopping is not None)
                    continue
                report.claimed += 1
                self._settle(queue, ticket, self._run(queue, ticket), report)
        self._say(f"worker {self.name} stopped ({self.stopping or 'idle'})")
        return report

    def _sleep(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.stopping is None and time.monotonic() < deadline:
            time.sleep(min(0.05, seconds))

    def _run(self, queue: RunQueue, ticket: Ticket) -> _Outcome:
        """Run (or resume) the ticket's pipeline under this worker's lease."""
        taking_over = ticket.claims > 1
        verb = "resuming" if ticket.run_id else "starting"
        where = ticket.workspace if ticket.remote is None else f"{ticket.branch} of {ticket.remote}"
        self._say(
            f"{verb} {ticket.ticket} in {where}"
            + (f" (run {ticket.run_id}, claim {ticket.claims})" if taking_over else "")
        )
        if ticket.claims > self.max_claims:
            detail = f"claimed {ticket.claims} times without finishing; not run again"
            return _Outcome(state=TicketState.FAILED, detail=detail)
        lease = Lease.of(ticket)
        interruption = Interruption()
        self._current = interruption
        if self.stopping is not None:
            interruption.request(self.stopping)
        keeper = LeaseKeeper(self.url, lease, self.lease_s, interrupt=self._signals)
        try:
            with contextlib.ExitStack() as turn:  # a remote ticket's turn in the workdir
                return self._drive(queue, ticket, lease, interruption, turn)
        except LeaseLostError as error:
            return _Outcome(state=None, detail=f"lost: {error}")
        finally:
            self._current = None
            keeper.stop()

    def _drive(
        self,
        queue: RunQueue,
        ticket: Ticket,
        lease: Lease,
        interruption: Interruption,
        turn: contextlib.ExitStack,
    ) -> _Outcome:
        remote: RemoteRun | None = None
        lost = ""  # a takeover's word on work the host before it took with it
        try:
            if self.workdir is None:
                workspace = open_workspace(Path(ticket.workspace), config_text=ticket.config)
                if workspace.config.run.worktree or workspace.config.run.merge:  # one per ticket
                    inside = ticket_worktree(Path(ticket.workspace), ticket.ticket)
                    workspace = open_workspace(inside, config_text=ticket.config)
            else:
                workspace, remote, lost = self._remote_workspace(
                    queue, ticket, lease, self.workdir, turn
                )
        except (HalfMadeError, TicketBusyError, RemoteUnreachableError) as error:
            # Never run in it, never done: the next claim, a lease from now, tries again
            # (on another host, maybe, where the remote answers and no frozen worker is).
            return self._later(f"not run: {error}")
        except LeaseLostError:
            raise
        except StoreError as error:
            return _Outcome(state=None, detail=f"store error: {error}")
        except (PipelineError, OSError, ValueError) as error:  # a config, a remote, a ticket id
            return _Outcome(state=TicketState.FAILED, detail=f"cannot run: {error}")
        handed_back: list[Instant] = []

        def hand_back(until: Instant) -> None:
            # The ticket goes back to the queue until the reset; this worker serves others.
            handed_back.append(until)
            interruption.request(f"waiting for a provider's reset until {until.isoformat()}")

        # The submitted [store] durability applies; its url does not (the run lives here).
        synced = workspace.config.store.durability is not Durability.PROCESS
        try:
            traced = contextlib.nullcontext() if self._traced is None else self._traced(ticket)
            with (
                traced as tracer,
                PostgresEventStore(self.url, guard=lease, synchronous_commit=synced) as leased,
            ):
                store: EventStore = leased
                if remote is not None:
                    carry = functools.partial(queue.carry, lease)
                    # The run's own redactor: the kept files are masked as its facts are.
                    redactor = Redactor.from_environment(
                        os.environ, workspace.config.redaction.variables
                    )
                    store = PublishingStore(
                        leased,
                        layout=workspace.layout,
                        publish=remote.publish,
                        carry=carry,
                        redact=redactor.text,
                    )
                result = drive(
                    workspace,
                    prompt=None if ticket.run_id else PromptSource(text=ticket.prompt),
                    run_id=None if ticket.run_id is None else RunId(ticket.run_id),
                    observer=Observers(
                        _Said(self._say), *([] if tracer is None else [TracingObserver(tracer)])
                    ),
                    store=store,
                    signals=False,
                    interruption=interruption,
                    leased=True,
                    hand_back=hand_back,
                )
                landed = land_ticket(
                    Path(ticket.workspace),
                    workspace,
                    result.state,
                    store,
                    self.url,
                    remote=remote,
                    config_text=ticket.config,
                )
        except LeaseLostError:
            raise
        except RemoteUnreachableError as error:
            return self._later(f"remote unreachable: {error}")
        except StoreError as error:
            # The database went away for longer than the store retries: the lease expires
            # and the run is taken over; nothing more to record from here.
            return _Outcome(state=None, detail=f"store error: {error}")
        except PipelineError as error:
            return _Outcome(state=TicketState.FAILED, detail=f"failed: {error}")
        except Exception as error:  # a bug in one run must not stop the worker
            return _Outcome(
                state=TicketState.FAILED, detail=f"crashed: {type(error).__name__}: {error}"
            )
        state = result.state
        if state.progress.phase is Phase.INTERRUPTED and interruption.reason is not None:
            if handed_back:
                reason = interruption.reason
                return _Outcome(state=None, detail=reason, release=True, not_before=handed_back[0])
            return _Outcome(state=None, detail=f"interrupted ({interruption.reason})", release=True)
        termination = state.progress.termination
        verdict = termination.value if termination is not None else state.progress.phase.value
        return _Outcome(state=TicketState.DONE, detail=verdict + landed + lost)

    def _later(self, detail: str) -> _Outcome:
        """Give the ticket back, claimable a lease from now."""
        later = datetime.now(UTC) + timedelta(seconds=self.lease_s)
        return _Outcome(state=None, detail=detail, release=True, not_before=later)

    def _remote_workspace(
        self,
        queue: RunQueue,
        ticket: Ticket,
        lease: Lease,
        workdir: Path,
        turn: contextlib.ExitStack,
    ) -> tuple[Workspace, RemoteRun, str]:
        """The remote ticket's workspace in ``workdir``, claimed on its remote, with this
        process's turn on it held in ``turn`` (a frozen worker of this host's keeps it, and
        the ticket goes back). Its repository is the one this host left, when it can go on,
        else made from the remote's branch with the run's kept files; then, when the log's
        next step was to commit an agent's work, that work stayed with the host before (the
        design's known limit), which the worker says and the third value ("; work of effect
        E lost with host H") adds to the ticket's outcome."""
        # Pushes go to the ticket's own branch only, whatever the store says (the team's).
        branch = f"ralph/run-{ticket.ticket}"
        if not (ticket.remote and ticket.base and ticket.target) or ticket.branch != branch:
            raise ConfigError(f"{ticket.ticket} is no remote ticket of the branch {branch}")
        url = remote_url(ticket.remote)  # again: the store is written by the whole team
        config = parse_config(ticket.config, f"the configuration of {ticket.ticket}")
        turn.enter_context(ticket_turn(workdir, ticket.ticket))
        remote = RemoteRun(
            url=url,
            cache=cache_for(workdir, url),
            repo=workdir / ticket.ticket,
            ticket=ticket.ticket,
            base=ticket.base,
            target=ticket.target,
            branch=branch,
            on_pushed=functools.partial(queue.note_pushed, lease),
            holds=functools.partial(queue.renew, lease),
            rebase_onto=config.rebase_onto,
        )
        remote.claim(holder=self.name, host=socket.gethostname(), run_id=ticket.run_id)
        pending, restore = None, None
        if ticket.run_id is not None:
            state, _checkpoint = load_state(queue.store, RunId(ticket.run_id))
            pending = pending_commit(state)
            restore = Restored(
                run_id=ticket.run_id,
                prompt=ticket.prompt,
                events_read=state.intake.events_offset,
                files=queue.files(ticket.ticket, carried=True),
            )
        files = queue.files(ticket.ticket)
        assert remote.pushed is not None  # the claim sets it
        repo, reused = ticket_repository(
            workdir,
            remote.cache,
            ticket=ticket.ticket,
            branch=branch,
            target=ticket.target,
            pushed=remote.pushed,
            pending=pending,
            config_text=ticket.config,
            rebase_onto=config.rebase_onto,
            setup=functools.partial(write_setup, files=files),
            restore=restore,
        )
        lost = ""
        if pending is not None and not reused and head_effect(repo) != pending:
            # Made anew from the remote, which lacks the commit of the log's pending step.
            lost = f"; work of effect {pending} lost with host {remote.last_host or 'unknown'}"
            self._say(f"warning: {ticket.ticket}: {lost[2:]} (it was never pushed)")
        workspace = open_workspace(repo, config_text=ticket.config)
        hidden = hiding_workdir(workspace.config, repo)
        return attrs.evolve(workspace, config=hidden), remote, lost

    def _settle(
        self, queue: RunQueue, ticket: Ticket, outcome: _Outcome, report: WorkerReport
    ) -> None:
        """Record the outcome in the queue (or give the ticket back) and count it."""
        outcome = attrs.evolve(outcome, detail=self._redactor.text(outcome.detail))
        try:
            lease = Lease.of(ticket)
            if outcome.state is not None and queue.finish(lease, outcome.state, outcome.detail):
                report.done += outcome.state is TicketState.DONE
                report.failed += outcome.state is TicketState.FAILED
                line = f"{outcome.state.value} ({outcome.detail})"
            elif (
                outcome.state is None
                and outcome.release
                and queue.release(lease, outcome.not_before)
            ):
                report.released += 1
                line = f"released ({outcome.detail})"
            else:
                line = self._left(queue, ticket, outcome, report)
        except StoreError as error:
            self._say(f"{ticket.ticket}: could not record {outcome.detail}: {error}")
            return
        self._say(f"{ticket.ticket}: {line}")

    def _left(
        self, queue: RunQueue, ticket: Ticket, outcome: _Outcome, report: WorkerReport
    ) -> str:
        """What became of a ticket this worker could not finish or release, said as it is:
        cancelled, taken over by another worker, or still this worker's (a store outage cut
        its run short) and given back to the queue now that the store answers."""
        try:
            now = queue.get(ticket.ticket)
        except StoreError:
            now = None
        if now is None:
            return (
                f"not recorded ({outcome.detail}); the queue cannot be read, so the ticket is "
                "left to its lease: once it expires, the next claim resumes the run"
            )
        if now.state is TicketState.CANCELLED:
            report.cancelled += 1
            return f"cancelled ({now.outcome}); its run was stopped"
        if now.claims != ticket.claims:  # claimed again since this worker's claim
            report.lost += 1
            return f"taken over by {now.worker} ({outcome.detail})"
        if now.state is TicketState.RUNNING and queue.release(Lease.of(ticket)):
            report.released += 1
            return f"released: the next claim resumes its run ({outcome.detail})"
        if now.state is TicketState.QUEUED:
            return f"back in the queue: the next claim resumes its run ({outcome.detail})"
        return f"now {now.state} ({now.outcome or 'no outcome'}); {outcome.detail}"

    @contextlib.contextmanager
    def _handling_signals(self) -> Iterator[None]:
        """SIGTERM and SIGINT stop the worker; the lease keeper's signal interrupts the run
        whose lease is gone. Only in the main thread (Python's signals are delivered there)."""
        if not self._signals:
            yield
            return

        def stop(signum: int, _frame: FrameType | None) -> None:
            self.stop(signal.Signals(signum).name)

        def lease_lost(_signum: int, _frame: FrameType | None) -> None:
            if self._current is not None:
                self._current.request("the lease is gone (cancelled or taken over)")

        handlers = {signal.SIGTERM: stop, signal.SIGINT: stop, LEASE_LOST: lease_lost}
        previous = {s: signal.signal(s, h) for s, h in handlers.items()}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)
