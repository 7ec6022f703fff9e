"""Resume, ``replay --verify`` and ``status`` compare the run's log with git and its events
file in real repositories: history rewritten under the run, git ahead of the log, a cut
events file. The run stops with what differs and what to do; no step is done twice."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path

import pytest

from pipeline.events import CommitCreated, RunResumed
from tests.faults.commits import commits_in_git
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    git,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    stored_events,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

SCRIPT = (
    """
[[development]]
write."work.txt" = "the work\\n"
write.".agent/out/status" = "completed\\ndone"
write.".agent/out/commit-message" = "Do the work"
emit = [["progress", "work written"]]

[[review]]
hang = true
"""
    + FINISH_EVERYTHING.replace("[[default]]", "[[review]]")
    + FINISH_EVERYTHING
)
"""Development commits its work and publishes a topic; the first review hangs."""


def interrupted_after_a_commit(tmp_path: Path) -> Path:
    """A run interrupted (SIGINT) during its first review, one commit recorded."""
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": SCRIPT}, agents={"main": scripted("s.toml")}
    )
    run = start_ralph("run", "--json-logs", cwd=root)
    assert run.stdout is not None
    try:
        for line in run.stdout:
            if '"review.review_pass_started"' in line:
                break
        else:
            raise AssertionError(run.communicate())
        time.sleep(0.5)  # the review agent is started and hangs
        run.send_signal(signal.SIGINT)
        run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130
    assert sum(isinstance(e, CommitCreated) for e in stored_events(root)) == 1
    return root


def test_head_moved_back_stops_the_resume_and_status_does_not_count_the_lost_commit(
    tmp_path: Path,
) -> None:
    """``git reset --hard HEAD~1`` under an interrupted run: resume exits 1 naming the commit
    the log records and how to put the branch back, records nothing; status counts 0 commits
    and says why; replay --verify fails."""
    root = interrupted_after_a_commit(tmp_path)
    recorded = git(root, "rev-parse", "HEAD")
    git(root, "reset", "--quiet", "--hard", "HEAD~1")
    before = stored_events(root)
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    message = " ".join(resumed.stderr.split())
    assert "no longer on HEAD" in message
    assert recorded[:12] in message
    assert "git reset --hard" in message
    assert stored_events(root) == before, "the refused resume wrote to the log"

    status = ralph("status", cwd=root)
    assert status.returncode == 0, status.stderr
    assert "no longer on HEAD" in " ".join(status.stderr.split())
    assert re.search(r"│ commits +│ 0 ", status.stdout), status.stdout

    verify = ralph("replay", "--verify", cwd=root)
    assert verify.returncode == 1, verify.stdout
    assert "no longer on HEAD" in " ".join(verify.stderr.split())

    git(root, "reset", "--quiet", "--hard", recorded)
    assert ralph("replay", "--verify", cwd=root).returncode == 0
    done = ralph("resume", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_branch_switched_under_the_run_stops_the_resume(tmp_path: Path) -> None:
    """HEAD on another branch (at the same commit): resume exits 1 and says to switch back."""
    root = interrupted_after_a_commit(tmp_path)
    git(root, "switch", "--quiet", "--create", "elsewhere")
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "git switch main" in " ".join(resumed.stderr.split())
    assert not any(isinstance(e, RunResumed) for e in stored_events(root))


def test_git_ahead_of_the_log_stops_the_resume_instead_of_redoing_a_step(tmp_path: Path) -> None:
    """A commit of this run the log does not record (not the step about to be asked for
    again): resume exits 1 and names it; nothing is committed."""
    root = interrupted_after_a_commit(tmp_path)
    (run_id,) = {e.run_id for e in stored_events(root) if hasattr(e, "run_id")}
    (root / "lost.txt").write_text("a step whose fact the log lost\n")
    git(root, "add", "lost.txt")
    git(root, "commit", "--quiet", "-m", "Lost", "-m", f"Ralph-Effect: {run_id}:3")
    before = commits_in_git(root)
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    message = " ".join(resumed.stderr.split())
    assert "its log does not record" in message
    assert f"{run_id}:3" in message
    assert commits_in_git(root) == before
    verify = ralph("replay", "--verify", cwd=root)
    assert verify.returncode == 1
    assert "its log does not record" in " ".join(verify.stderr.split())


def test_an_events_file_shorter_than_the_log_read_stops_the_resume(tmp_path: Path) -> None:
    """The events file cut below the offset the log has read: resume exits 1 and says so."""
    root = interrupted_after_a_commit(tmp_path)
    (events_file,) = (root / ".ralph").glob("**/events*.jsonl")
    events_file.write_text("")
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "events file" in " ".join(resumed.stderr.split())
