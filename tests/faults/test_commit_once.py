"""SIGINT, SIGTERM and kill -9 at every point of the commit step, with and without other
changes in the tree at resume: every commit git holds is in the run's log exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from pipeline.events import CommitSkipped, HookRan, SandboxChecked
from tests.faults.commits import commits_in_git, commits_in_log
from tests.faults.gitfault import install
from tests.runtime.workspace import (
    RALPH,
    ROOT,
    WORK,
    make_workspace,
    ralph,
    scripted,
    stored_events,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]

POINTS = ["add --all", "diff --cached", "commit --quiet", "rev-parse HEAD"]
"""The git commands of the commit step, in order: the fault fires right after one of them."""


def interrupted_run(
    tmp_path: Path,
    after: str,
    signum: signal.Signals,
    *,
    then_kill: bool = False,
    sandbox: str = 'mode = "off"',
    extra: str = "",
) -> Path:
    """A workspace whose run got ``signum`` right after its first commit step's ``after``
    (with ``then_kill``, a kill -9 once the interruption fact is stored, before its
    checkpoint; ``sandbox``: the body of its ``[sandbox]``, empty for the default; ``extra``:
    more of its ``ralph.toml``)."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": WORK},
        agents={"main": scripted("s.toml")},
        sandbox=sandbox,
        extra=extra,
    )
    armed = tmp_path / "armed"
    armed.touch()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PATH": install(tmp_path / "bin"),
        "GITFAULT_AFTER": after,
        "GITFAULT_ARMED": str(armed),
        "GITFAULT_SIGNAL": signum.name,
    }
    if then_kill:
        env["RALPH_FAULT_INJECT"] = "lifecycle.run_interrupted:1:SIGKILL"
    done = subprocess.run(
        [*RALPH, "run"], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )
    assert not armed.exists(), f"the commit step never ran {after!r}: {done.stdout}"
    expected = -signal.SIGKILL if signum is signal.SIGKILL or then_kill else 130
    assert done.returncode == expected, done.stdout + done.stderr
    return root


def assert_each_commit_logged_once(root: Path) -> None:
    in_git = commits_in_git(root)
    effects = [effect for _sha, effect in in_git]
    assert len(effects) == len(set(effects)), f"a step committed twice: {in_git}"
    in_log = commits_in_log(root)
    assert len(in_log) == len(set(in_log)), f"a commit recorded twice: {in_log}"
    assert sorted(in_log) == sorted(sha for sha, _effect in in_git), (in_git, in_log)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
@pytest.mark.parametrize("after", POINTS)
def test_a_stop_inside_the_commit_step_leaves_every_commit_logged_once(
    tmp_path: Path, after: str, signum: signal.Signals
) -> None:
    """Stopped right after ``after``; ``ralph resume`` finishes, and the run's commits in git
    and its ``CommitCreated`` facts are the same, none doubled."""
    root = interrupted_run(tmp_path, after, signum)
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_each_commit_logged_once(root)
    assert commits_in_git(root), "the work was never committed"


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_other_changes_at_resume_do_not_commit_the_step_twice(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Stopped after ``git commit`` made the commit; a file changed before the resume: the
    resumed step finds its own commit by its trailer instead of committing again."""
    root = interrupted_run(tmp_path, "commit --quiet", signum)
    (root / "other.txt").write_text("changed while the run was stopped\n")
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_each_commit_logged_once(root)


def test_a_kill_before_the_interruption_checkpoint_still_finds_the_commit(tmp_path: Path) -> None:
    """SIGINT after ``git commit``, then kill -9 once ``RunInterrupted`` is stored and before
    its checkpoint: the resume saves that checkpoint first, reconciliation still knows the
    commit as the pending step's, and the step finds it instead of committing again."""
    root = interrupted_run(tmp_path, "commit --quiet", signal.SIGINT, then_kill=True)
    (root / "other.txt").write_text("changed while the run was stopped\n")
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert_each_commit_logged_once(root)


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_resume_that_records_its_sandbox_still_adopts_the_commit(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """With the default sandbox, a resume records ``SandboxChecked`` before anything else;
    stopped right after ``git commit`` (the work tree clean then), the resumed commit step
    still adopts the commit by its trailer: one ``CommitCreated`` per trailer in git, no
    ``CommitSkipped``, nothing committed twice."""
    root = interrupted_run(tmp_path, "commit --quiet", signum, sandbox="")
    assert not dirty(root), "the commit took everything; the work tree is clean"
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = stored_events(root)
    assert any(isinstance(e, SandboxChecked) for e in events), "the sandbox was not on"
    assert not [e for e in events if isinstance(e, CommitSkipped)], "the commit was skipped"
    assert_each_commit_logged_once(root)
    assert len(commits_in_git(root)) == 1, commits_in_git(root)


BEFORE_COMMIT = """
[[hooks]]
name = "look"
point = "before_commit"
command = ["true"]
on_error = "warn"
timeout_s = 30
"""
"""A ``before_commit`` hook, which a resume runs again before the commit step."""


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: s.name)
def test_a_before_commit_hook_run_again_at_resume_still_adopts_the_commit(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """Stopped right after ``git commit``; the resume runs the ``before_commit`` hook again
    before the commit step: the step still adopts the commit by its trailer, no
    ``CommitSkipped``, nothing committed twice."""
    root = interrupted_run(tmp_path, "commit --quiet", signum, extra=BEFORE_COMMIT)
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = stored_events(root)
    assert sum(isinstance(e, HookRan) for e in events) >= 2, "the hook did not run again"
    assert not [e for e in events if isinstance(e, CommitSkipped)], "the commit was skipped"
    assert_each_commit_logged_once(root)
    assert len(commits_in_git(root)) == 1, commits_in_git(root)


def dirty(root: Path) -> str:
    """What ``git status`` shows in ``root`` (ralph's own folders left out)."""
    shown = subprocess.run(
        ["git", "status", "--porcelain", "--", ".", ":!.ralph", ":!.agent"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    return shown.stdout
