"""kill -9 inside ``git worktree add`` while ralph makes a worktree (a run's, a fork's, a
queue ticket's): the half-made worktree it leaves (a partial checkout, ``index.lock`` left,
locked, nothing carried) is recognised, never used, and removed or made anew by the next
command."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.app.workers import submit
from pipeline.events import RunCompleted, RunStarted
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, Ticket, TicketState
from tests.faults.gitfault import install
from tests.runtime.workspace import (
    RALPH,
    ROOT,
    SHELL_REPORTS,
    git,
    listed_worktrees,
    make_workspace,
    ralph,
)
from tests.workers.support import start_worker

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

FILES = 3000
"""Files in the repository: enough that a worktree's checkout takes a moment to kill it in."""


def big_workspace(root: Path, extra: str = "") -> Path:
    """A workspace with a shell agent that completes in one step, and :data:`FILES` files
    committed."""
    root = make_workspace(
        root, scripts={}, agents={"main": ["sh", "-c", SHELL_REPORTS]}, extra=extra
    )
    for i in range(FILES):
        folder = root / "src" / f"d{i % 30}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n" * 20)
    git(root, "add", "src")
    git(root, "commit", "--quiet", "-m", "many files")
    return root


def faulty(tmp_path: Path, root: Path) -> tuple[dict[str, str], Path]:
    """An environment whose git kills itself and ralph (-9) in the first ``git worktree
    add``'s checkout (once its ``index.lock`` exists), and the trigger file that fault
    removes when it fires."""
    armed = tmp_path / "armed"
    armed.touch()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": install(tmp_path / "bin"),
        "GITFAULT_AFTER": "worktree add",
        "GITFAULT_WHEN": f"{root.resolve()}/.git/worktrees/*/index.lock",
        "GITFAULT_ARMED": str(armed),
        "GITFAULT_SIGNAL": "SIGKILL",
    }
    return env, armed


def assert_half_made(root: Path) -> Path:
    """The kill left one worktree half-made: locked, its index locked, a partial checkout."""
    (admin,) = (root / ".git" / "worktrees").iterdir()
    assert (admin / "locked").is_file()
    assert (admin / "index.lock").is_file(), "killed in the checkout"
    folder = Path((admin / "gitdir").read_text().strip()).parent
    assert len(list(folder.rglob("*.txt"))) < FILES
    return folder


def assert_whole(folder: Path) -> None:
    """A worktree made whole: every file checked out as committed, nothing locked."""
    assert len(list((folder / "src").rglob("*.txt"))) == FILES
    assert git(folder, "status", "--porcelain", "--", "src") == ""
    assert "locked" not in git(folder, "worktree", "list", "--porcelain")


def test_a_run_killed_in_its_worktrees_checkout_is_cleaned_and_the_next_run_works(
    tmp_path: Path,
) -> None:
    """``ralph run --worktree`` killed inside ``git worktree add``: ``worktrees list`` shows the
    worktree half-made, ``worktrees clean`` (no name, no --force) removes it and its branch,
    and the next ``ralph run --worktree`` completes in a whole worktree."""
    root = big_workspace(tmp_path / "repo")
    env, armed = faulty(tmp_path, root)
    killed = subprocess.run(
        [*RALPH, "run", "--worktree"], cwd=root, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert not armed.exists(), killed.stderr
    assert killed.returncode == -9, killed.stderr
    folder = assert_half_made(root)
    (half,) = listed_worktrees(root)
    assert (half["phase"], half["run"], half["busy"]) == ("half-made", None, False)
    cleaned = ralph("worktrees", "clean", cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert "Removed" in cleaned.stderr
    assert listed_worktrees(root) == []
    assert not folder.exists()
    assert git(root, "branch", "--list", "ralph/*") == ""
    again = ralph("run", "--worktree", cwd=root)
    assert again.returncode == 0, again.stderr
    (made,) = listed_worktrees(root)
    assert made["phase"] == "completed"
    assert_whole(Path(str(made["path"])))


def test_a_fork_killed_half_made_is_removed_by_clean_force_name(tmp_path: Path) -> None:
    """``ralph fork`` killed inside its ``git worktree add`` leaves a locked half-made fork;
    ``ralph worktrees clean --force NAME`` removes it and its branch (git alone refuses a
    locked worktree), and the next fork is made whole."""
    root = big_workspace(tmp_path / "repo")
    ran = ralph("run", cwd=root)
    assert ran.returncode == 0, ran.stderr
    facts = ralph("events", "--format", "jsonl", cwd=root).stdout.splitlines()
    env, armed = faulty(tmp_path, root)
    killed = subprocess.run(
        [*RALPH, "fork", "--at", str(len(facts))], cwd=root, env=env, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert not armed.exists(), killed.stderr
    assert killed.returncode == -9, killed.stderr
    folder = assert_half_made(root)
    (half,) = listed_worktrees(root)
    assert str(half["branch"]).startswith("ralph/fork-")
    cleaned = ralph("worktrees", "clean", "--force", str(half["name"]), cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert listed_worktrees(root) == []
    assert not folder.exists()
    assert git(root, "branch", "--list", "ralph/*") == ""
    again = ralph("fork", "--at", str(len(facts)), cwd=root)
    assert again.returncode == 0, again.stderr
    (fork,) = listed_worktrees(root)
    assert_whole(Path(str(fork["path"])))
    # A person's own lock is no mark of ralph's: kept, and --force is not suggested again.
    git(root, "worktree", "lock", "--reason", "on a USB disk", str(fork["path"]))
    kept = ralph("worktrees", "clean", "--force", str(fork["name"]), cwd=root)
    assert kept.returncode == 2
    assert "on a USB disk" in kept.stderr
    assert "--force" not in kept.stderr
    assert "git worktree unlock" in kept.stderr


def _ticket(url: str, ticket: str) -> Ticket:
    with PostgresEventStore(url) as store:
        found = RunQueue(store).get(ticket)
    assert found is not None
    return found


def test_a_worker_killed_in_a_tickets_worktree_checkout_is_taken_over_and_completes_once(
    tmp_path: Path, postgres_url: str
) -> None:
    """``[run] worktree = true`` submitted; the worker is killed -9 inside the ticket's ``git
    worktree add``; the next worker takes the ticket over, removes the half-made worktree,
    makes it anew and the run completes once in it (one start, one completion, one commit)."""
    root = big_workspace(tmp_path / "repo", extra="[run]\nworktree = true\n")
    ticket = submit(postgres_url, root).ticket
    env, armed = faulty(tmp_path, root)
    lease = ("--lease-seconds", "1.5", "--poll-seconds", "0.1")
    first = start_worker(postgres_url, *lease, "--exit-when-idle", cwd=tmp_path, env=env)
    _out, err = first.communicate(timeout=120)
    assert not armed.exists(), err
    assert first.returncode == -9, err
    folder = assert_half_made(root)
    assert _ticket(postgres_url, ticket).state is TicketState.RUNNING
    second = start_worker(postgres_url, *lease, cwd=tmp_path, env=env)
    deadline = time.monotonic() + 120
    while _ticket(postgres_url, ticket).state is TicketState.RUNNING:
        assert time.monotonic() < deadline, "the ticket was never taken over and finished"
        time.sleep(0.1)
    second.terminate()
    _out, err = second.communicate(timeout=60)
    done = _ticket(postgres_url, ticket)
    assert (done.state, done.outcome, done.claims) == (TicketState.DONE, "completed", 2), err
    assert done.run_id is not None
    with PostgresEventStore(postgres_url) as store:
        log = list(store.read(done.run_id))  # type: ignore[arg-type]
    assert sum(isinstance(e, RunStarted) for e in log) == 1
    assert sum(isinstance(e, RunCompleted) for e in log) == 1
    assert folder == (tmp_path / "repo-worktrees" / ticket).resolve()
    assert_whole(folder)
    assert git(root, "rev-list", "--count", f"HEAD..ralph/run-{ticket}") == "1"
