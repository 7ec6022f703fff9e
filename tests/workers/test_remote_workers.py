"""Workers on remotes (issue 49, slice 3): ``ralph worker --workdir`` runs remote tickets in
repositories of their branches, pushing each commit before its fact is appended, so that a
worker killed or frozen mid-run is finished by another, in another folder, from the pushed
branch. Real PostgreSQL, bare git remotes in the test's folder, worker processes with a
scripted agent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pipeline.app.workers import submit
from pipeline.app.workspace import recorded_commits
from pipeline.events import PipelineEvent, RunStarted, TargetAdvanced
from pipeline.handlers.store.postgres import PostgresEventStore, advisory_lease
from pipeline.handlers.store.queue import RunQueue, Ticket, TicketState
from tests.runtime.workspace import OWN_FILE, git
from tests.workers.remotes import URL_KINDS, bare_remote, effects_on, hook, reflog, working
from tests.workers.support import SHELL_ITERATE, read_until, start_worker

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

FAST = ("--poll-seconds", "0.05")


def _worker(url: str, workdir: Path, *args: str) -> subprocess.Popen[str]:
    """``ralph worker --workdir WORKDIR ARGS`` in a process group of its own (a kill of the
    group takes its agents too, as a host's death would)."""
    return start_worker(url, "--workdir", str(workdir), *FAST, *args, cwd=workdir.parent,
                        new_session=True)  # fmt: skip


def _ticket(url: str, ticket: str) -> Ticket:
    with PostgresEventStore(url) as store:
        found = RunQueue(store).get(ticket)
    assert found is not None
    return found


def _log(url: str, run_id: str) -> list[PipelineEvent]:
    with PostgresEventStore(url) as store:
        return list(store.read(run_id))  # type: ignore[arg-type]


def _logged_effects(url: str, run_id: str) -> list[str]:
    """The effect ids of the log's ``CommitCreated`` facts, in order."""
    return [c.effect_id for c in recorded_commits(_log(url, run_id))[1]]


def _wait(
    url: str, ticket: str, done: Callable[[Ticket], object], timeout_s: float = 120
) -> Ticket:
    """Wait until ``done(ticket)`` holds; the ticket then."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = _ticket(url, ticket)
        if done(found):
            return found
        time.sleep(0.05)
    raise AssertionError(f"{ticket} never got there: {_ticket(url, ticket)}")


def _stop(worker: subprocess.Popen[str]) -> str:
    """SIGTERM the worker and return its lines once it exited."""
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    _out, err = worker.communicate(timeout=60)
    return err


@pytest.mark.parametrize("kind", URL_KINDS)
def test_a_remote_ticket_runs_and_its_branch_holds_exactly_the_logged_commits(
    postgres_url: str, tmp_path: Path, kind: str
) -> None:
    """A worker with a workdir runs a remote ticket to its end: the ticket is done, the run's
    branch on the remote holds one commit per logged ``CommitCreated`` (the same effects, in
    order) on top of the base, the ticket's ``pushed`` is the branch's head, and the claim
    ref is on the remote; a ``[run] merge = true`` run that does not complete lands nothing; a
    path ticket is left to the path workers."""
    remote = bare_remote(tmp_path / "host", kind, iterations=3, agent=working())
    config = (remote.clone / "ralph.toml").read_text()
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    merged = submit(postgres_url, remote.clone, remote="origin").ticket
    path_ticket = submit(postgres_url, remote.clone).ticket
    worker = _worker(postgres_url, tmp_path / "w1", "--exit-when-idle")
    _out, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err
    for each in (ticket, merged):
        done = _ticket(postgres_url, each)
        assert done.state is TicketState.DONE, (done.outcome, err)
        assert done.run_id is not None
        branch = f"ralph/run-{each}"
        logged = _logged_effects(postgres_url, done.run_id)
        assert len(logged) >= 3
        assert effects_on(remote.path, branch) == logged
        head = git(remote.path, "rev-parse", f"refs/heads/{branch}")
        assert done.pushed == head
        assert git(remote.path, "rev-list", "--count", f"{done.base}..{head}") == str(len(logged))
        assert git(remote.path, "rev-parse", f"refs/ralph/claims/{each}")
    assert _ticket(postgres_url, merged).outcome == "max_iterations"  # not completed: kept
    left = _ticket(postgres_url, path_ticket)
    assert (left.state, left.claims) == (TicketState.QUEUED, 0), "a path ticket was claimed"
    assert git(remote.path, "rev-parse", "main") == git(remote.clone, "rev-parse", "origin/main")


def test_merge_true_lands_a_remote_ticket_on_the_remotes_main(
    postgres_url: str, tmp_path: Path
) -> None:
    """``[run] merge = true`` on a remote ticket: once its run completes, the worker lands it
    on the remote's ``main`` through the merge queue over the remote (replayed, gated, a
    leased push); the ticket says so, the log ends in ``TargetAdvanced`` and ``main`` holds
    the run's commits."""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", OWN_FILE])
    config = (remote.clone / "ralph.toml").read_text()
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    before = git(remote.path, "rev-parse", "main")
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    worker = _worker(postgres_url, tmp_path / "w1", "--exit-when-idle")
    _out, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err
    done = _ticket(postgres_url, ticket)
    assert (done.state, done.outcome) == (TicketState.DONE, "completed; landed on main"), err
    assert done.run_id is not None
    assert isinstance(_log(postgres_url, done.run_id)[-1], TargetAdvanced)
    main = git(remote.path, "rev-parse", "main")
    assert main != before
    assert main == git(remote.path, "rev-parse", f"refs/heads/ralph/run-{ticket}")
    assert effects_on(remote.path, "main") == _logged_effects(postgres_url, done.run_id)


def test_a_landing_cut_off_by_an_unreachable_remote_is_finished_by_the_next_claim(
    postgres_url: str, tmp_path: Path
) -> None:
    """A remote gone when the landing pushes the target: the completed run's ticket is not
    done ("not merged") but given back; once the remote is back, the next claim resumes the
    run and lands it, the log ending in ``TargetAdvanced``."""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", OWN_FILE])
    config = (remote.clone / "ralph.toml").read_text()
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    gone = tmp_path / "gone.git"
    # The first push to main takes the remote away (once: the hook removes itself).
    hook(
        remote.path,
        "pre-receive",
        f"""
while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then rm -f "$0"; mv "$PWD" {gone}; exit 1; fi
done
""",
    )
    before = git(remote.path, "rev-parse", "main")
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    lease = ("--lease-seconds", "1.5")
    first = _worker(postgres_url, tmp_path / "w", "--exit-when-idle", *lease)
    _out, err = first.communicate(timeout=240)
    assert first.returncode == 0, err
    assert "1 released" in err, err
    back = _ticket(postgres_url, ticket)
    assert (back.state, back.claims) == (TicketState.QUEUED, 1), back.outcome
    gone.rename(remote.path)
    assert git(remote.path, "rev-parse", "main") == before
    again = _worker(postgres_url, tmp_path / "w", *lease)
    try:
        done = _wait(postgres_url, ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(again)
    assert done.outcome == "completed; landed on main", err
    assert done.run_id is not None
    assert isinstance(_log(postgres_url, done.run_id)[-1], TargetAdvanced)
    main = git(remote.path, "rev-parse", "main")
    assert main == git(remote.path, "rev-parse", f"refs/heads/ralph/run-{ticket}") != before


def test_a_landing_the_remote_refuses_says_so_and_where_the_run_is(
    postgres_url: str, tmp_path: Path
) -> None:
    """A remote whose hook declines every push to ``main`` (a protected branch): the
    completed run's ticket is done, its outcome giving git's refusal (not a target that
    moved) and where the run's branch is to merge by the remote's own means; main stays."""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", OWN_FILE])
    config = (remote.clone / "ralph.toml").read_text()
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    hook(
        remote.path,
        "pre-receive",
        """
while read old new ref; do
  if [ "$ref" = refs/heads/main ]; then echo "main is protected" >&2; exit 1; fi
done
""",
    )
    before = git(remote.path, "rev-parse", "main")
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle")
    _out, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err
    done = _ticket(postgres_url, ticket)
    assert done.state is TicketState.DONE, err
    outcome = done.outcome or ""
    assert outcome.startswith("completed; not merged: "), outcome
    assert "refused the push of" in outcome, outcome
    assert "main is protected" in outcome, outcome
    assert outcome.endswith(
        f"(the run is on ralph/run-{ticket} of {remote.path}: merge it into main there)"
    ), outcome
    assert git(remote.path, "rev-parse", "main") == before


def test_a_run_branch_the_host_will_not_rewind_after_its_landing_stays(
    postgres_url: str, tmp_path: Path
) -> None:
    """A remote that denies non-fast-forward pushes: the run, replayed onto a ``main`` that
    moved meanwhile, lands; its branch, which cannot follow the replay there, stays where the
    run left it, and the ticket says "landed on main" (a refusal of the target alone stops a
    landing)."""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", OWN_FILE])
    git(remote.path, "config", "receive.denyNonFastForwards", "true")
    config = (remote.clone / "ralph.toml").read_text()
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    (remote.clone / "other.txt").write_text("meanwhile\n")
    git(remote.clone, "add", "other.txt")
    git(remote.clone, "commit", "--quiet", "-m", "meanwhile")
    git(remote.clone, "push", "--quiet", "origin", "main")
    moved = git(remote.path, "rev-parse", "main")
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle")
    _out, err = worker.communicate(timeout=240)
    assert worker.returncode == 0, err
    done = _ticket(postgres_url, ticket)
    assert (done.state, done.outcome) == (TicketState.DONE, "completed; landed on main"), err
    main = git(remote.path, "rev-parse", "main")
    assert git(remote.path, "rev-parse", f"{main}^") == moved
    assert git(remote.path, "rev-parse", f"refs/heads/ralph/run-{ticket}") == done.pushed != main


def test_a_remotes_path_and_its_file_url_take_one_landing_lease(
    postgres_url: str, tmp_path: Path
) -> None:
    """The landings' lease is named by the remote, not by how a ticket spells it: with the
    lease of the remote's path held, a ticket submitted through its ``file://`` URL waits
    for it before landing, and lands once it is let go."""
    remote = bare_remote(tmp_path / "host", "file", agent=["sh", "-c", OWN_FILE])
    config = (remote.clone / "ralph.toml").read_text()
    (remote.clone / "ralph.toml").write_text("[run]\nmerge = true\n" + config)
    before = git(remote.path, "rev-parse", "main")
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    waiting = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with (
        advisory_lease(postgres_url, f"ralph-integration:{remote.path}"),
        psycopg.connect(postgres_url, autocommit=True) as conn,
    ):
        worker = _worker(postgres_url, tmp_path / "w1", "--exit-when-idle")
        deadline = time.monotonic() + 120
        while conn.execute(waiting).fetchone() != (1,):
            assert worker.poll() is None, worker.communicate()[1]
            assert time.monotonic() < deadline, "the landing never waited for the lease"
            time.sleep(0.1)
        assert git(remote.path, "rev-parse", "main") == before
    _out, err = worker.communicate(timeout=240)
    done = _ticket(postgres_url, ticket)
    assert (done.state, done.outcome) == (TicketState.DONE, "completed; landed on main"), err
    assert git(remote.path, "rev-parse", "main") != before


def test_killed_mid_run_it_is_finished_from_the_pushed_branch_in_another_workdir(
    postgres_url: str, tmp_path: Path
) -> None:
    """kill -9 of a worker's process group after its second pushed commit: a worker with
    another workdir (another host, as far as the run can tell) takes the ticket over once the
    lease expires and finishes it from the remote's branch; the remote's ``Ralph-Effect``
    trailers equal the log's ``CommitCreated`` effects, none twice."""
    remote = bare_remote(tmp_path / "host", iterations=5, agent=working(0.2))
    ticket = submit(postgres_url, remote.clone, remote=str(remote.path)).ticket
    lease = ("--lease-seconds", "1.5")
    first = _worker(postgres_url, tmp_path / "w1", *lease)
    try:
        _wait(postgres_url, ticket, lambda t: t.pushed not in (None, t.base) and t.run_id)
        _wait(postgres_url, ticket,
              lambda t: len(effects_on(remote.path, f"ralph/run-{ticket}")) >= 2)  # fmt: skip
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    second = _worker(postgres_url, tmp_path / "w2", *lease)
    try:
        done = _wait(postgres_url, ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(second)
    assert f"resuming {ticket}" in err, err
    assert done.claims == 2
    assert done.run_id is not None
    on_remote = effects_on(remote.path, f"ralph/run-{ticket}")
    assert on_remote == _logged_effects(postgres_url, done.run_id)
    assert len(set(on_remote)) == len(on_remote) >= 5
    assert sum(isinstance(e, RunStarted) for e in _log(postgres_url, done.run_id)) == 1


def test_a_zombie_woken_after_a_takeover_neither_appends_nor_pushes(
    postgres_url: str, tmp_path: Path
) -> None:
    """A worker frozen (SIGSTOP) past its lease mid-run: another, in another workdir, takes
    the run over and finishes it; woken, the first appends nothing and pushes nothing (the
    remote's reflogs of the branch and the claim ref list no update after the takeover's
    end), and says the ticket was taken over."""
    remote = bare_remote(tmp_path / "host", iterations=4, agent=working(0.3))
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    branch = f"refs/heads/ralph/run-{ticket}"
    claim = f"refs/ralph/claims/{ticket}"
    lease = ("--lease-seconds", "1")
    first = _worker(postgres_url, tmp_path / "w1", *lease)
    second = None
    try:
        _wait(postgres_url, ticket, lambda t: t.pushed not in (None, t.base) and t.run_id)
        os.killpg(first.pid, signal.SIGSTOP)
        second = _worker(postgres_url, tmp_path / "w2", *lease)
        done = _wait(postgres_url, ticket, lambda t: t.state is TicketState.DONE)
        assert done.run_id is not None
        head = len(_log(postgres_url, done.run_id))
        pushes = reflog(remote.path, branch), reflog(remote.path, claim)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    # The thawed worker renews (and learns), or pushes and appends (refused), and says so.
    first_err = read_until(first, "taken over by") + _stop(first)
    assert second is not None
    _stop(second)
    assert "taken over" in first_err, first_err
    assert len(_log(postgres_url, done.run_id)) == head, "the zombie appended"
    assert (reflog(remote.path, branch), reflog(remote.path, claim)) == pushes, "it pushed"
    assert effects_on(remote.path, branch.removeprefix("refs/heads/")) == _logged_effects(
        postgres_url, done.run_id
    )


def test_the_plan_and_issues_survive_a_takeover(postgres_url: str, tmp_path: Path) -> None:
    """A worker killed while its agent fixes a review's issues: the worker that takes the run
    over in another workdir has the first host's plan and issues in its new repository, and
    asks the fix again with the very prompt the first host rendered; no invocation fails."""
    calls = tmp_path / "calls"
    calls.mkdir()
    # Each call keeps its prompt (stdin); the first fix of a review's issues hangs, once.
    agent = f"""
n=$(ls {calls} | wc -l); n=$((n + 1)); cat > {calls}/$n.md
mkdir -p .agent/out
printf '1. the plan of call %s' "$n" > .agent/out/plan.md
printf 'completed\\ndone' > .agent/out/status
printf -- '- an issue seen by call %s\\n' "$n" > .agent/out/issues.md
printf 'Do it' > .agent/out/commit-message
echo "$n" >> work.txt
if grep -q 'an issue seen' .agent/ISSUES.md 2>/dev/null && [ ! -e {tmp_path}/hung ]; then
  touch {tmp_path}/hung; sleep 600
fi
"""
    remote = bare_remote(tmp_path / "host", agent=["sh", "-c", agent])
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    lease = ("--lease-seconds", "1.5")
    first = _worker(postgres_url, tmp_path / "w1", *lease)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "hung").exists():
            assert time.monotonic() < deadline, "the fix never started"
            time.sleep(0.05)
        hung = len(list(calls.iterdir()))
        kept = {
            name: (tmp_path / "w1" / ticket / ".agent" / name).read_bytes()
            for name in ("PLAN.md", "ISSUES.md")
        }
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    second = _worker(postgres_url, tmp_path / "w2", *lease)
    try:
        done = _wait(postgres_url, ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(second)
    assert done.run_id is not None
    assert f"resuming {ticket}" in err, err
    assert kept["PLAN.md"] == b"1. the plan of call 1"
    assert b"an issue seen by call" in kept["ISSUES.md"]
    again = tmp_path / "w2" / ticket / ".agent"
    assert (again / "PLAN.md").read_bytes() == kept["PLAN.md"]
    assert (calls / f"{hung + 1}.md").read_bytes() == (calls / f"{hung}.md").read_bytes()
    assert kept["ISSUES.md"].decode() in (calls / f"{hung + 1}.md").read_text()
    log = _log(postgres_url, done.run_id)
    assert not [e for e in log if type(e).__name__ == "InvocationFailed"], log


def test_two_workers_on_one_host_share_one_remote_each_ticket_once(
    postgres_url: str, tmp_path: Path
) -> None:
    """``ralph worker --workdir W --concurrency 2`` (two processes, one folder) runs four
    remote tickets of one remote: each is done after one claim, each branch holds exactly its
    log's commits, and the workers share one cache of the remote."""
    remote = bare_remote(tmp_path / "host", iterations=2, agent=working(0.1))
    tickets = [submit(postgres_url, remote.clone, remote="origin").ticket for _ in range(4)]
    workdir = tmp_path / "w"
    worker = _worker(postgres_url, workdir, "--concurrency", "2", "--exit-when-idle")
    _out, err = worker.communicate(timeout=400)
    assert worker.returncode == 0, err
    for ticket in tickets:
        done = _ticket(postgres_url, ticket)
        assert (done.state, done.claims) == (TicketState.DONE, 1), (done.outcome, err)
        assert done.run_id is not None
        logged = _logged_effects(postgres_url, done.run_id)
        assert effects_on(remote.path, f"ralph/run-{ticket}") == logged
        assert len(logged) >= 2
    assert len(list(workdir.glob("remote-*.git"))) == 1
    assert sorted(p.name for p in workdir.glob("t-*") if p.is_dir()) == sorted(tickets)


def test_a_same_host_reclaim_keeps_its_uncommitted_work(postgres_url: str, tmp_path: Path) -> None:
    """A worker killed while its agent works, restarted on the same folder: the ticket's
    repository is reused with what the killed agent left uncommitted, which the resumed
    run's next commit puts on the remote branch."""
    agent = f"""
{SHELL_ITERATE}
echo "$$" >> work.txt
if [ ! -e {tmp_path}/hung ] && [ -s work.txt ] && [ "$(wc -l < work.txt)" -ge 3 ]; then
  echo "left by $$" > left.txt; touch {tmp_path}/hung; sleep 600
fi
"""
    remote = bare_remote(tmp_path / "host", iterations=3, agent=["sh", "-c", agent])
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    workdir, lease = tmp_path / "w", ("--lease-seconds", "1.5")
    first = _worker(postgres_url, workdir, *lease)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "hung").exists():
            assert time.monotonic() < deadline, "the agent never hung"
            time.sleep(0.05)
        left = (workdir / ticket / "left.txt").read_text()
        pushed = _ticket(postgres_url, ticket).pushed
        assert git(remote.path, "ls-tree", "--name-only", f"ralph/run-{ticket}").count("left") == 0
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    again = _worker(postgres_url, workdir, *lease)
    try:
        done = _wait(postgres_url, ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(again)
    assert f"resuming {ticket}" in err, err
    assert done.pushed != pushed
    assert git(remote.path, "show", f"ralph/run-{ticket}:left.txt") + "\n" == left


def test_a_branch_moved_by_someone_else_fails_the_ticket_with_both_shas(
    postgres_url: str, tmp_path: Path
) -> None:
    """A run's branch that someone pushed to the remote before the first claim fails the
    ticket, its outcome naming the branch's commit and the base; nothing is run."""
    remote = bare_remote(tmp_path / "host")
    ticket = submit(postgres_url, remote.clone, remote="origin")
    git(remote.clone, "commit", "--quiet", "--allow-empty", "-m", "someone else's")
    moved = git(remote.clone, "rev-parse", "HEAD")
    git(remote.clone, "push", "--quiet", "origin", f"HEAD:refs/heads/{ticket.branch}")
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle")
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    failed = _ticket(postgres_url, ticket.ticket)
    assert failed.state is TicketState.FAILED, failed.outcome
    assert moved in (failed.outcome or "")
    assert (ticket.base or "-") in (failed.outcome or "")
    assert failed.run_id is None


def test_an_unreachable_remote_gives_the_ticket_back_for_later(
    postgres_url: str, tmp_path: Path
) -> None:
    """A remote gone from its URL when the worker claims: after git's retries the ticket is
    released, queued again with its claim counted, claimable a lease later; nothing failed."""
    remote = bare_remote(tmp_path / "host")
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    remote.path.rename(tmp_path / "gone.git")
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle", "--lease-seconds", "60")
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "1 released" in err, err
    back = _ticket(postgres_url, ticket)
    assert (back.state, back.claims, back.worker) == (TicketState.QUEUED, 1, None)
    assert back.not_before is not None
    assert back.not_before > back.updated_at


def _held_once(marker: Path) -> str:
    """A hook's lines that hold (sleep) the first push of a commit to a run's branch (not a
    claim's: its old value is a commit), once, touching ``marker`` first."""
    return f"""
while read old new ref; do
  case "$ref" in refs/heads/ralph/run-*)
    if [ "$old" != {"0" * 40} ] && [ ! -e {marker} ]; then touch {marker}; sleep 600; fi;;
  esac
done
"""


def _until(marker: Path) -> None:
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert time.monotonic() < deadline, f"{marker.name} never came"
        time.sleep(0.05)


def test_kill_9_while_pre_receive_holds_the_push_moves_neither_ref(
    postgres_url: str, tmp_path: Path
) -> None:
    """kill -9 of the worker's group while the remote's pre-receive hook holds its first
    commit's push: neither the branch nor the claim ref moved; a worker in another workdir
    finishes the run, each logged commit on the remote once, and says, as the ticket's
    outcome does, that the held one (never pushed) is lost with the dead worker's host."""
    remote = bare_remote(tmp_path / "host", iterations=2, agent=working(0.1))
    ticket = submit(postgres_url, remote.clone, remote="origin")
    branch, claim = f"refs/heads/{ticket.branch}", f"refs/ralph/claims/{ticket.ticket}"
    hook(remote.path, "pre-receive", _held_once(tmp_path / "held"))
    lease = ("--lease-seconds", "1.5")
    first = _worker(postgres_url, tmp_path / "w1", *lease)
    try:
        _until(tmp_path / "held")
        before = git(remote.path, "rev-parse", branch, claim)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    time.sleep(0.5)
    assert git(remote.path, "rev-parse", branch, claim) == before
    assert before.split()[0] == ticket.base
    said = "%(trailers:key=Ralph-Effect,valueonly)"
    held = git(tmp_path / "w1" / ticket.ticket, "log", "-1", f"--format={said}").strip()
    second = _worker(postgres_url, tmp_path / "w2", *lease)
    try:
        done = _wait(postgres_url, ticket.ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(second)
    lost = f"work of effect {held} lost with host {socket.gethostname()}"
    assert lost in err, err
    assert (done.outcome or "").endswith(f"; {lost}"), done.outcome
    assert done.run_id is not None
    on_remote = effects_on(remote.path, ticket.branch or "")
    assert on_remote == _logged_effects(postgres_url, done.run_id)
    # The held commit was on the dead host only (the known limit): the next step's is there.
    assert len(set(on_remote)) == len(on_remote) >= 1


def test_kill_9_after_post_receive_is_adopted_by_its_trailer(
    postgres_url: str, tmp_path: Path
) -> None:
    """kill -9 of the worker's group while the remote's post-receive hook runs after its
    first commit's push (the remote one commit past the log): a worker in another workdir
    adopts that commit by its trailer, so the log records it once and the remote holds each
    logged commit once; nothing is said lost."""
    remote = bare_remote(tmp_path / "host", iterations=2, agent=working(0.1))
    ticket = submit(postgres_url, remote.clone, remote="origin")
    branch = f"refs/heads/{ticket.branch}"
    hook(remote.path, "post-receive", _held_once(tmp_path / "held"))
    lease = ("--lease-seconds", "1.5")
    first = _worker(postgres_url, tmp_path / "w1", *lease)
    try:
        _until(tmp_path / "held")
        pushed = git(remote.path, "rev-parse", branch)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    run_id = _ticket(postgres_url, ticket.ticket).run_id
    assert run_id is not None
    assert _logged_effects(postgres_url, run_id) == [], "the commit's fact went in before the push"
    assert pushed != ticket.base
    second = _worker(postgres_url, tmp_path / "w2", *lease)
    try:
        done = _wait(postgres_url, ticket.ticket, lambda t: t.state is TicketState.DONE)
    finally:
        err = _stop(second)
    assert "lost with host" not in err + (done.outcome or ""), err
    commits = recorded_commits(_log(postgres_url, run_id))[1]
    assert commits[0].sha == pushed, "the pushed commit was not adopted"
    on_remote = effects_on(remote.path, ticket.branch or "")
    assert on_remote == [c.effect_id for c in commits]
    assert len(set(on_remote)) == len(on_remote) >= 2
    assert done.claims == 2


def test_a_worker_with_a_workdir_warns_of_secrets_in_the_global_git_config(
    postgres_url: str, tmp_path: Path
) -> None:
    """A worker with a workdir whose git global configuration sends an HTTP header (a
    token, often) says so at start, since the sandbox shows that file to agents."""
    config = tmp_path / "gitconfig"
    config.write_text('[http "https://example.com/"]\n\textraheader = Authorization: x\n')
    worker = start_worker(
        postgres_url,
        "--workdir",
        str(tmp_path / "w"),
        "--exit-when-idle",
        *FAST,
        cwd=tmp_path,
        env={**os.environ, "GIT_CONFIG_GLOBAL": str(config)},
    )
    _out, err = worker.communicate(timeout=60)
    assert worker.returncode == 0, err
    assert "extraheader" in err, err
    assert "Authorization: x" not in err


def test_a_ticket_whose_stored_branch_is_not_its_own_fails_and_pushes_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    """A remote ticket whose stored job names ``main`` as its branch (the store is the
    team's to write) fails before any claim on the remote: ``main`` is untouched and no
    claim ref is made."""
    remote = bare_remote(tmp_path / "host")
    ticket = submit(postgres_url, remote.clone, remote="origin")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            """UPDATE procrastinate_jobs SET args = jsonb_set(args, '{branch}', '"main"') """
            "WHERE id = %s",
            (ticket.job,),
        )
    main = git(remote.path, "rev-parse", "main")
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle")
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    failed = _ticket(postgres_url, ticket.ticket)
    assert failed.state is TicketState.FAILED, failed.outcome
    assert f"ralph/run-{ticket.ticket}" in (failed.outcome or "")
    assert git(remote.path, "rev-parse", "main") == main
    assert git(remote.path, "for-each-ref", "refs/ralph/") == ""


@pytest.mark.parametrize(("field", "value"), [("target", "*"), ("base", "main")])
def test_a_ticket_whose_stored_target_or_base_is_no_name_fails_and_fetches_nothing(
    postgres_url: str, tmp_path: Path, field: str, value: str
) -> None:
    """A remote ticket whose stored target is ``*`` (every branch, in a refspec) or whose
    base is a name, not a commit id, fails before any fetch or claim, naming the value: the
    worker's cache holds no other branch and the remote no claim (before: a base of ``main``
    was claimed on the remote, and ``*`` failed only on an ``ls-remote`` miss)."""
    remote = bare_remote(tmp_path / "host")
    git(remote.clone, "push", "--quiet", "origin", "main:refs/heads/someone-elses")
    ticket = submit(postgres_url, remote.clone, remote="origin")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE procrastinate_jobs SET args = jsonb_set(args, %s, to_jsonb(%s::text)) "
            "WHERE id = %s",
            ([field], value, ticket.job),
        )
    worker = _worker(postgres_url, tmp_path / "w", "--exit-when-idle")
    _out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    failed = _ticket(postgres_url, ticket.ticket)
    assert failed.state is TicketState.FAILED, failed.outcome
    assert repr(value) in (failed.outcome or "")
    for cache in (tmp_path / "w").glob("remote-*.git"):
        assert "someone-elses" not in git(cache, "for-each-ref")
    assert git(remote.path, "for-each-ref", "refs/ralph/") == ""
