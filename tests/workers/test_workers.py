"""Submitting pipelines and running them with workers against a real PostgreSQL server:
one worker, four workers sharing a hundred runs, and a worker killed mid-run whose run
another worker takes over."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.app.workers import submit
from pipeline.core.serialization import unstructure_event
from pipeline.events import (
    WIRE_TAGS,
    CheckpointSaved,
    HatActivated,
    InvocationStarted,
    PipelineEvent,
    RunCompleted,
    RunInterrupted,
    RunResumed,
    RunStarted,
)
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, TicketState
from tests.postgres import find_binaries, postgres_server
from tests.runtime.workspace import make_workspace, ralph, scripted
from tests.workers.support import drain, queue_workspace, read_until, start_worker

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def _log(url: str, run_id: str) -> list[PipelineEvent]:
    with PostgresEventStore(url) as store:
        return list(store.read(run_id))  # type: ignore[arg-type]


def test_a_submitted_run_is_run_by_a_worker_with_what_was_submitted(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph submit`` prints a ticket; ``ralph worker --exit-when-idle`` runs it to its end
    with the configuration submitted (the file broken afterwards changes nothing); the
    ticket is done with the termination reason, and ``ralph runs`` lists it."""
    root = queue_workspace(tmp_path / "ws", iterations=2)
    submitted = ralph("submit", "--store", postgres_url, "-C", str(root), cwd=tmp_path)
    assert submitted.returncode == 0, submitted.stderr
    ticket = submitted.stdout.strip()
    assert ticket.startswith("t-")
    (root / "ralph.toml").write_text("this is not [valid toml")
    worker = start_worker(postgres_url, "--exit-when-idle", "--poll-seconds", "0.1", cwd=tmp_path)
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "claimed 1: 1 done, 0 failed" in err
    with PostgresEventStore(postgres_url) as store:
        done = RunQueue(store).get(ticket)
    assert done is not None
    assert done.state is TicketState.DONE
    assert done.outcome == "max_iterations"
    assert done.run_id is not None
    log = _log(postgres_url, done.run_id)
    assert isinstance(log[0], RunStarted)
    assert isinstance(log[-1], RunCompleted)
    assert sum(isinstance(e, RunStarted) for e in log) == 1
    listed = ralph("runs", postgres_url, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if ticket in line)
    assert " done " in row
    assert "max_iterations" in row


def test_submissions_that_cannot_run_are_refused_before_anything_is_queued(
    tmp_path: Path, postgres_url: str
) -> None:
    """No queue named, a SQLite store as queue, or a workspace without a configuration:
    exit 2 with the reason, and nothing is queued; a workspace naming its database in
    ``[store] url`` needs no ``--store``."""
    root = queue_workspace(tmp_path / "ws")
    nowhere = ralph("submit", "-C", str(root), cwd=tmp_path)
    assert nowhere.returncode == 2
    assert "say which queue" in nowhere.stderr
    configured = queue_workspace(tmp_path / "configured")
    with (configured / "ralph.toml").open("a") as toml:
        toml.write(f'\n[store]\nurl = "{postgres_url}"\n')
    from_config = ralph("submit", "-C", str(configured), cwd=tmp_path)
    assert from_config.returncode == 0, from_config.stderr
    sqlite = ralph("submit", "--store", "sqlite:///q.db", "-C", str(root), cwd=tmp_path)
    assert sqlite.returncode == 2
    assert "the queue lives in PostgreSQL" in sqlite.stderr
    (root / "ralph.toml").unlink()
    missing = ralph("submit", "--store", postgres_url, "-C", str(root), cwd=tmp_path)
    assert missing.returncode == 2
    assert "ralph.toml: not found" in missing.stderr
    with PostgresEventStore(postgres_url) as store:
        (queued,) = RunQueue(store).tickets()
    assert queued.ticket == from_config.stdout.strip()
    assert queued.workspace == str(configured.resolve())


RESEARCH = """
[[hats.researcher]]
write."RESEARCH.md" = "finding"
emit = [["research.finding", "it is sqlite"]]

[[hats.synthesizer]]
emit = [["LOOP_COMPLETE", "sqlite"]]
"""


def test_a_submitted_preset_runs_its_workflow_on_a_worker(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph submit --preset research``: the worker runs the preset's hats over the
    workspace's ralph.toml as submitted (the ticket holds the merged configuration), and the
    read-only run completes; a chain or an unknown preset is refused before anything is
    queued."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"research.toml": RESEARCH},
        agents={"main": scripted("research.toml")},
        budgets="max_iterations = 4",
    )
    for wrong, said in (("research,tdd", "submit one preset per ticket"), ("nope", "nope")):
        refused = ralph(
            "submit", "--store", postgres_url, "--preset", wrong, "-C", str(root), cwd=tmp_path
        )
        assert refused.returncode == 2, refused.stderr
        assert said in refused.stderr
    submitted = ralph(
        "submit", "--store", postgres_url, "--preset", "research", "-C", str(root), cwd=tmp_path
    )
    assert submitted.returncode == 0, submitted.stderr
    worker = start_worker(postgres_url, "--exit-when-idle", "--poll-seconds", "0.1", cwd=tmp_path)
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    with PostgresEventStore(postgres_url) as store:
        (done,) = RunQueue(store).tickets()
    assert done.state is TicketState.DONE, done.outcome
    assert done.outcome == "completed"
    assert done.run_id is not None
    log = _log(postgres_url, done.run_id)
    woken = [(e.hat, e.topic) for e in log if isinstance(e, HatActivated)]
    assert woken == [("researcher", "research.start"), ("synthesizer", "research.finding")]


def test_four_workers_run_a_hundred_pipelines_each_exactly_once(
    tmp_path: Path, postgres_url: str
) -> None:
    """4 worker processes share 100 queued pipelines: every ticket ends done, claimed once,
    by the one worker that says it started it; every run's log starts once, ends once and
    was never resumed (nobody else wrote to it)."""
    workspaces = [queue_workspace(tmp_path / f"ws{i}", shell=True) for i in range(100)]
    tickets = [submit(postgres_url, workspace) for workspace in workspaces]
    err = drain(postgres_url, 4, tmp_path)
    started = [line.split()[1] for line in err.splitlines() if line.startswith("starting ")]
    assert sorted(started) == sorted(t.ticket for t in tickets)
    pollers = {line.split()[1] for line in err.splitlines() if line.startswith("worker ")}
    assert len(pollers) == 4
    with PostgresEventStore(postgres_url) as store:
        final = {t.ticket: t for t in RunQueue(store).tickets()}
        for ticket in tickets:
            done = final[ticket.ticket]
            assert done.state is TicketState.DONE, (done.ticket, done.outcome)
            assert done.claims == 1
            assert done.run_id is not None
            log = list(store.read(done.run_id))  # type: ignore[arg-type]
            assert sum(isinstance(e, RunStarted) for e in log) == 1
            assert sum(isinstance(e, RunCompleted) for e in log) == 1
            assert not any(isinstance(e, RunResumed) for e in log)
            assert isinstance(log[-1], RunCompleted)
        assert len(store.runs()) == 100


def _facts(log: list[PipelineEvent]) -> list[dict[str, Any]]:
    """The log as data without what differs between two runs of one script by design: the
    times, the run id, the resumption marks and where checkpoints fell."""
    facts = []
    for event in log:
        if isinstance(event, RunResumed):
            continue
        data = unstructure_event(event)
        for varying in ("at", "duration_ms", "emitted_at", "run_id"):
            data.pop(varying, None)
        if isinstance(event, CheckpointSaved):
            data.pop("sequence")
        facts.append(data)
    return facts


def _wait_for(url: str, ticket: str, events: int, timeout_s: float = 60) -> str:
    """Wait until the ticket's run holds more than ``events`` events; its run id."""
    deadline = time.monotonic() + timeout_s
    with PostgresEventStore(url) as store:
        queue = RunQueue(store)
        while time.monotonic() < deadline:
            run_id = queue.run_of(ticket)
            if run_id is not None and store.head(run_id) > events:
                return run_id
            time.sleep(0.02)
    raise AssertionError(f"the run of {ticket} never reached {events} events")


def _wait_until_done(url: str, ticket: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    with PostgresEventStore(url) as store:
        queue = RunQueue(store)
        while time.monotonic() < deadline:
            found = queue.get(ticket)
            if found is not None and found.state is TicketState.DONE:
                return
            time.sleep(0.05)
    raise AssertionError(f"{ticket} was not done within {timeout_s} s")


@pytest.mark.parametrize("kill_after", [12, 40])
def test_a_killed_workers_run_is_taken_over_and_ends_as_if_never_interrupted(
    tmp_path: Path, postgres: Any, monkeypatch: pytest.MonkeyPatch, kill_after: int
) -> None:
    """kill -9 the worker mid-run: another worker claims the ticket once the lease expires,
    resumes from the checkpoint and tail, and the final log holds the same facts as an
    uninterrupted run of the same script in the same place, none twice."""
    # Fixed git dates: the same commits in both runs, so their shas compare.
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2026-07-01T00:00:00Z")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-07-01T00:00:00Z")
    root = tmp_path / "ws"
    logs = []
    for kill in (False, True):
        url = postgres.new_database()
        if root.exists():
            shutil.rmtree(root)
        ticket = submit(url, queue_workspace(root, iterations=4, delay_s=0.05)).ticket
        lease = ("--lease-seconds", "1.5", "--poll-seconds", "0.1")
        first = start_worker(url, *lease, "--exit-when-idle", cwd=tmp_path)
        if kill:
            _wait_for(url, ticket, kill_after)
            os.kill(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
            killed_at = time.monotonic()
            # It finds the ticket held at first, and keeps looking until the lease expires.
            second = start_worker(url, *lease, cwd=tmp_path)
            _wait_until_done(url, ticket)
            second.send_signal(signal.SIGTERM)
            _out, err = second.communicate(timeout=60)
            assert second.returncode == 0, err
            assert f"resuming {ticket}" in err
            assert time.monotonic() - killed_at > 1.0
        else:
            _out, err = first.communicate(timeout=120)
            assert first.returncode == 0, err
        with PostgresEventStore(url) as store:
            done = RunQueue(store).get(ticket)
            assert done is not None
            assert done.state is TicketState.DONE
            assert done.claims == (2 if kill else 1)
            assert done.run_id is not None
            logs.append(list(store.read(done.run_id)))  # type: ignore[arg-type]
    uninterrupted, taken_over = logs
    assert any(isinstance(e, RunResumed) for e in taken_over)
    # An agent the kill cut short left its start in the log (recorded before its process
    # started); the resumed run ran that attempt again under its number. Nothing else differs.
    cut_short = [
        i
        for i, event in enumerate(taken_over[:-1])
        if isinstance(event, InvocationStarted) and isinstance(taken_over[i + 1], RunResumed)
    ]
    assert len(cut_short) <= 1
    kept = [e for i, e in enumerate(taken_over) if i not in cut_short]
    assert _facts(kept) == _facts(uninterrupted)


def test_sigterm_interrupts_the_run_and_gives_the_ticket_back_for_another_worker(
    tmp_path: Path, postgres_url: str
) -> None:
    """SIGTERM mid-run: the worker records the interruption and its checkpoint, releases the
    ticket (queued again, no worker) and exits 0 at once; the next worker resumes the run
    to its end, one start and one completion in the log."""
    ticket = submit(postgres_url, queue_workspace(tmp_path / "ws", iterations=4, delay_s=0.3))
    first = start_worker(postgres_url, "--poll-seconds", "0.1", cwd=tmp_path)
    _wait_for(postgres_url, ticket.ticket, 8)
    first.send_signal(signal.SIGTERM)
    _out, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert "1 released" in err
    with PostgresEventStore(postgres_url) as store:
        released = RunQueue(store).get(ticket.ticket)
        assert released is not None
        assert (released.state, released.worker) == (TicketState.QUEUED, None)
        assert released.run_id is not None
        tail = list(store.read(released.run_id))[-2:]  # type: ignore[arg-type]
    assert isinstance(tail[0], RunInterrupted)
    assert tail[0].reason == "SIGTERM"
    assert isinstance(tail[1], CheckpointSaved)
    second = start_worker(postgres_url, "--exit-when-idle", "--poll-seconds", "0.1", cwd=tmp_path)
    _out, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    with PostgresEventStore(postgres_url) as store:
        done = RunQueue(store).get(ticket.ticket)
        assert done is not None
        assert (done.state, done.claims) == (TicketState.DONE, 2)
        log = list(store.read(released.run_id))  # type: ignore[arg-type]
    assert sum(isinstance(e, RunStarted) for e in log) == 1
    assert sum(isinstance(e, RunCompleted) for e in log) == 1


def test_an_idle_worker_is_woken_by_a_submission_instead_of_waiting_its_poll(
    tmp_path: Path, postgres_url: str
) -> None:
    """A worker polling every 60 s, idle, starts a run submitted meanwhile within seconds:
    the submission rings the queue's bell. SIGTERM then stops the idle worker at once."""
    worker = start_worker(postgres_url, "--poll-seconds", "60", cwd=tmp_path)
    try:
        assert worker.stderr is not None
        assert "polling" in worker.stderr.readline()
        time.sleep(0.5)  # past its first look at the empty queue: now it waits
        submitted_at = time.monotonic()
        ticket = submit(postgres_url, queue_workspace(tmp_path / "ws"))
        _wait_for(postgres_url, ticket.ticket, 0, timeout_s=30)
        assert time.monotonic() - submitted_at < 30, "claimed only when the poll came round"
        _wait_until_done(postgres_url, ticket.ticket, timeout_s=60)
        stopped_at = time.monotonic()
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=30) == 0
        # Not stopped at once, it would wait out its 60 s poll; half of that is "at once"
        # even on a loaded machine.
        assert time.monotonic() - stopped_at < 30
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()


def test_a_stalled_worker_that_wakes_after_a_takeover_writes_nothing(
    tmp_path: Path, postgres_url: str
) -> None:
    """A worker frozen (SIGSTOP) past its lease: another takes the run over and finishes it;
    thawed, the first finds its lease gone, stops its run without writing, and leaves the
    ticket to its new worker. The log has one start, one completion."""
    ticket = submit(postgres_url, queue_workspace(tmp_path / "ws", iterations=3, delay_s=0.2))
    lease = ("--lease-seconds", "1", "--poll-seconds", "0.1")
    first = start_worker(postgres_url, *lease, cwd=tmp_path)
    run_id = _wait_for(postgres_url, ticket.ticket, 8)
    os.kill(first.pid, signal.SIGSTOP)
    second = start_worker(postgres_url, *lease, cwd=tmp_path)
    try:
        _wait_until_done(postgres_url, ticket.ticket)
        with PostgresEventStore(postgres_url) as store:
            head = store.head(run_id)  # type: ignore[arg-type]
    finally:
        os.kill(first.pid, signal.SIGCONT)
    # The thawed worker renews (and learns), or appends (and is refused), and says so.
    learnt = read_until(first, "taken over by")
    first.send_signal(signal.SIGTERM)
    second.send_signal(signal.SIGTERM)
    _out, rest = first.communicate(timeout=60)
    first_err = learnt + rest
    second.communicate(timeout=60)
    assert first.returncode == 0, first_err
    assert "taken over" in first_err
    assert "1 taken over" in first_err
    with PostgresEventStore(postgres_url) as store:
        done = RunQueue(store).get(ticket.ticket)
        assert done is not None
        assert (done.state, done.claims) == (TicketState.DONE, 2)
        assert done.worker is not None
        first_name = first_err.splitlines()[0].split()[1]
        assert done.worker != first_name
        log = list(store.read(run_id))  # type: ignore[arg-type]
    assert len(log) == head, "the thawed worker appended after the takeover"
    assert sum(isinstance(e, RunStarted) for e in log) == 1
    assert sum(isinstance(e, RunCompleted) for e in log) == 1


def test_a_worker_rides_out_a_database_restart_mid_run(tmp_path: Path, postgres: Any) -> None:
    """The server goes down for two seconds while a worker runs a pipeline: the worker's
    appends and lease renewals are retried with backoff, and the run ends done, claimed
    once, never resumed, every event stored once."""
    binaries = find_binaries()
    assert binaries is not None  # the session's server (``postgres``) was found the same way
    with postgres_server(binaries) as server:  # its own: this test stops it
        url = server.new_database()
        ticket = submit(url, queue_workspace(tmp_path / "ws", iterations=3, delay_s=0.2))
        # The store retries for a third of the lease (10 s here): room for the outage and a
        # slow restart of the server on a loaded machine, where 10 s leases left 3.3 s.
        worker = start_worker(url, "--lease-seconds", "30", "--poll-seconds", "0.1", cwd=tmp_path)
        try:
            _wait_for(url, ticket.ticket, 8)
            server.stop()
            time.sleep(2)
            server.start()
            _wait_until_done(url, ticket.ticket)
        finally:
            worker.send_signal(signal.SIGTERM)
            _out, err = worker.communicate(timeout=60)
        assert worker.returncode == 0, err
        with PostgresEventStore(url) as store:
            done = RunQueue(store).get(ticket.ticket)
            assert done is not None
            assert (done.state, done.claims, done.outcome) == (
                TicketState.DONE,
                1,
                "max_iterations",
            )
            log = list(store.read(done.run_id))  # type: ignore[arg-type]
    assert sum(isinstance(e, RunStarted) for e in log) == 1
    assert sum(isinstance(e, RunCompleted) for e in log) == 1
    assert not any(isinstance(e, RunResumed) for e in log)


def test_with_otel_file_each_tickets_run_is_a_trace_of_its_own(
    tmp_path: Path, postgres_url: str
) -> None:
    """Two tickets, one worker with --otel-file: two ``ralph ticket`` root spans naming their
    tickets, in two traces; every effect span sits under its ticket's root, and the facts a
    trace's spans carry, in order, are that run's stored log."""
    tickets = [submit(postgres_url, queue_workspace(tmp_path / f"ws{i}")).ticket for i in range(2)]
    spans_file = tmp_path / "spans.jsonl"
    worker = start_worker(
        postgres_url, "--exit-when-idle", "--otel-file", str(spans_file), cwd=tmp_path
    )
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    spans = [orjson.loads(line) for line in spans_file.read_text().splitlines()]
    roots = {
        span["attributes"]["ralph.ticket"]: span for span in spans if span["name"] == "ralph ticket"
    }
    assert sorted(roots) == sorted(tickets)
    assert len({root["context"]["trace_id"] for root in roots.values()}) == 2
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        for ticket, root in roots.items():
            assert root["parent_id"] is None
            trace = sorted(
                (
                    span
                    for span in spans
                    if span["context"]["trace_id"] == root["context"]["trace_id"]
                    and span is not root
                ),
                key=lambda span: span["start_time"],
            )
            assert {span["parent_id"] for span in trace} == {root["context"]["span_id"]}
            run_id = queue.run_of(ticket)
            assert run_id is not None
            stored = [WIRE_TAGS[type(event)] for event in store.read(run_id)]
            assert [tag for span in trace for tag in span["attributes"]["ralph.facts"]] == stored


def test_otel_file_with_several_worker_processes_is_a_usage_error(
    tmp_path: Path, postgres_url: str
) -> None:
    """One file cannot take the spans of several processes: exit 2, saying what to use;
    --otel is passed on to every process."""
    result = ralph(
        "worker",
        "--store",
        postgres_url,
        "--concurrency",
        "2",
        "--otel-file",
        "s.jsonl",
        cwd=tmp_path,
    )
    assert result.returncode == 2
    assert "--otel-file takes one worker's spans" in result.stderr
    assert not (tmp_path / "s.jsonl").exists()
    passed_on = ralph(
        "worker",
        "--store",
        postgres_url,
        "--concurrency",
        "2",
        "--otel",
        "--exit-when-idle",
        cwd=tmp_path,
    )
    assert passed_on.returncode == 0, passed_on.stderr  # each process took --otel


def test_ralph_cancel_stops_a_running_ticket_and_the_worker_goes_on(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph cancel`` on a running ticket: its worker stops the run within a third of its
    lease, writes nothing more to it, counts it cancelled and runs the next ticket; a queued
    ticket cancelled never runs; an unknown or ended ticket is a usage error."""
    long_one = submit(postgres_url, queue_workspace(tmp_path / "ws1", iterations=6, delay_s=0.5))
    skipped = submit(postgres_url, queue_workspace(tmp_path / "ws2"))
    after = submit(postgres_url, queue_workspace(tmp_path / "ws3"))
    cancelled = ralph("cancel", skipped.ticket, "--store", postgres_url, cwd=tmp_path)
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"Cancelled {skipped.ticket} (it was queued)" in cancelled.stderr
    worker = start_worker(
        postgres_url,
        "--exit-when-idle",
        "--lease-seconds",
        "3",
        "--poll-seconds",
        "0.1",
        cwd=tmp_path,
    )
    run_id = _wait_for(postgres_url, long_one.ticket, 8)
    stopped = ralph(
        "cancel",
        long_one.ticket,
        "--store",
        postgres_url,
        "--reason",
        "wrong branch",
        cwd=tmp_path,
    )
    assert stopped.returncode == 0, stopped.stderr
    assert "it was running under worker" in stopped.stderr
    with PostgresEventStore(postgres_url) as store:
        # Every append after the cancel committed is refused: this is the run's last head.
        head_at_cancel = store.head(run_id)  # type: ignore[arg-type]
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert f"{long_one.ticket}: cancelled (wrong branch); its run was stopped" in err
    assert "claimed 2: 1 done, 0 failed, 0 released, 0 taken over, 1 cancelled" in err
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        states = {t: queue.get(t) for t in (long_one.ticket, skipped.ticket, after.ticket)}
        head = store.head(run_id)  # type: ignore[arg-type]
        log = list(store.read(run_id))  # type: ignore[arg-type]
    assert {t: s.state for t, s in states.items() if s is not None} == {
        long_one.ticket: TicketState.CANCELLED,
        skipped.ticket: TicketState.CANCELLED,
        after.ticket: TicketState.DONE,
    }
    never_run = states[skipped.ticket]
    assert never_run is not None
    assert never_run.claims == 0
    assert not any(isinstance(e, RunCompleted) for e in log), "stopped before its end"
    assert head == head_at_cancel, "nothing written after the cancel"
    assert not any(isinstance(e, RunInterrupted) for e in log), "its interruption was refused"
    unknown = ralph("cancel", "t-nope", "--store", postgres_url, cwd=tmp_path)
    assert unknown.returncode == 2
    assert "no ticket 't-nope'" in unknown.stderr
    ended = ralph("cancel", after.ticket, "--store", postgres_url, cwd=tmp_path)
    assert ended.returncode == 2
    assert f"{after.ticket} has ended (done: " in ended.stderr


def _children(pid: int) -> list[int]:
    """The pids of ``pid``'s child processes (Linux)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


def test_workers_stop_when_their_parent_is_killed_with_kill_9(
    tmp_path: Path, postgres_url: str
) -> None:
    """``ralph worker --concurrency 2`` killed with SIGKILL while its workers run tickets:
    both workers stop within seconds (no orphans), each interrupting its run and giving its
    ticket back to the queue."""
    tickets = [
        submit(postgres_url, queue_workspace(tmp_path / f"ws{i}", iterations=20, delay_s=0.3))
        for i in range(2)
    ]
    parent = start_worker(postgres_url, "--concurrency", "2", "--poll-seconds", "0.1", cwd=tmp_path)
    children: list[int] = []
    try:
        for ticket in tickets:
            _wait_for(postgres_url, ticket.ticket, 4)
        children = _children(parent.pid)
        assert len(children) == 2
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while any(_alive(child) for child in children):
            assert time.monotonic() < deadline, "the workers outlived their parent"
            time.sleep(0.1)
    finally:
        parent.kill()
        for child in children:
            if _alive(child):
                os.kill(child, signal.SIGKILL)
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        for ticket in tickets:
            back = queue.get(ticket.ticket)
            assert back is not None
            assert (back.state, back.worker) == (TicketState.QUEUED, None)


def test_tickets_of_one_repository_run_at_once_each_in_a_worktree_of_its_own(
    tmp_path: Path, postgres_url: str
) -> None:
    """``[run] worktree = true`` submitted: three tickets of one workspace, run by one
    worker three at a time, each in ``<workspace>-worktrees/<ticket>`` on its own branch with
    its own commit; the workspace's HEAD and work tree are untouched; a takeover finds the
    ticket's worktree again instead of making another."""
    import subprocess

    from pipeline.app.workspace import run_worktrees, ticket_worktree
    from tests.runtime.workspace import SHELL_REPORTS

    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={"main": ["sh", "-c", SHELL_REPORTS]},
        extra="[run]\nworktree = true\n",
    )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    tickets = [submit(postgres_url, root) for _ in range(3)]
    err = drain(postgres_url, 3, tmp_path, timeout=180)
    with PostgresEventStore(postgres_url) as store:
        final = {t.ticket: t for t in RunQueue(store).tickets()}
    assert {final[t.ticket].state for t in tickets} == {TicketState.DONE}, err[-2000:]
    listed = {w.name: w for w in run_worktrees(root)}
    assert set(listed) == {t.ticket for t in tickets}
    for ticket in tickets:
        worktree = listed[ticket.ticket]
        assert worktree.path == (tmp_path / "repo-worktrees" / ticket.ticket).resolve()
        assert worktree.ahead == 1, "its run's commit, on its own branch"
    assert (
        subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout
        == head
    )
    assert not (root / "work.txt").exists()
    again = ticket_worktree(root, tickets[0].ticket)
    assert again == listed[tickets[0].ticket].path
    assert len(run_worktrees(root)) == 3


def test_tickets_with_merge_land_through_the_merge_queue(tmp_path: Path, postgres_url: str) -> None:
    """``[run] merge = true`` submitted: each ticket runs in its worktree and, once its run
    completes, lands on the workspace's branch through the repository's merge queue, its
    integration's facts in its log in the queue's store; the ticket says so."""
    import subprocess

    from pipeline.events import TargetAdvanced
    from tests.runtime.test_merge_queue import OWN_FILE

    root = make_workspace(
        tmp_path / "repo",
        scripts={},
        agents={"main": ["sh", "-c", OWN_FILE]},
        extra="[run]\nmerge = true\n",
    )
    tickets = [submit(postgres_url, root) for _ in range(2)]
    err = drain(postgres_url, 2, tmp_path, timeout=180)
    with PostgresEventStore(postgres_url) as store:
        final = {t.ticket: t for t in RunQueue(store).tickets()}
        for ticket in tickets:
            done = final[ticket.ticket]
            assert done.state is TicketState.DONE, err[-2000:]
            assert done.outcome == "completed; landed on main", done.outcome
            assert done.run_id is not None
            facts = list(store.read(done.run_id))
            assert isinstance(facts[-1], TargetAdvanced)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()

    assert git("rev-list", "--count", "main") == "3"
    assert git("status", "--porcelain") == ""
    assert sorted(p.name for p in root.glob("*.txt")) == sorted(f"{t.ticket}.txt" for t in tickets)
