"""Gates end to end: real `ralph` processes, real gate commands, the scripted agent, real git.
A gate that fails sends the work back with its output in the developer's next prompt and the
run completes once it passes; a stopping gate ends the run; kill -9 during a gate and the
resume runs it again; a gate whose program is missing is refused before anything runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.events import (
    CommitCreated,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    HatActivated,
    RunCompleted,
    TerminationReason,
)
from pipeline.handlers.runtime import CUT_MARK, LOG_CAP_BYTES
from tests.runtime.test_topology import events_so_far
from tests.runtime.workspace import make_workspace, ralph, scripted, start_ralph, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

REPORTS = """
write.".agent/out/plan.md" = "1. do it"
write.".agent/out/status" = "completed\\nsummary"
write.".agent/out/issues.md" = ""
write.".agent/out/commit-message" = "Do it"
"""

SCRIPT = f"""
[[development]]
save_prompt = ".ralph/dev-1.md"
write."work.txt" = "first"
{REPORTS}
[[development]]
save_prompt = ".ralph/dev-2.md"
write."fixed.txt" = "fixed"
{REPORTS}
[[default]]
{REPORTS}
"""
"""The developer does some work, then (told why) the work the gate checks."""

CHECK = (
    "import pathlib, sys\n"
    "ok = pathlib.Path('fixed.txt').exists()\n"
    "print('checking fixed.txt:', 'present' if ok else 'MISSING: write fixed.txt')\n"
    "sys.exit(0 if ok else 1)\n"
)


def gated_workspace(tmp_path: Path, gates: str, script: str = SCRIPT) -> Path:
    """A repository whose every role is the scripted agent, with ``gates``."""
    return make_workspace(
        tmp_path / "ws",
        scripts={"script.toml": script},
        agents={"main": scripted("script.toml")},
        budgets="max_iterations = 3\nmax_review_passes = 0\nbackoff_base_ms = 10\n"
        "backoff_cap_ms = 20",
        extra=gates,
    )


def gate_toml(name: str, code: str, on_failure: str = "block") -> str:
    """A ``[[gates]]`` table running ``code`` with this interpreter."""
    argv = f'["{sys.executable}", "-c", """{code}"""]'
    return (
        f'[[gates]]\nname = "{name}"\nargv = {argv}\ntimeout_s = 60\non_failure = "{on_failure}"\n'
    )


def test_a_failing_gate_sends_the_work_back_and_the_run_completes_once_it_passes(
    tmp_path: Path,
) -> None:
    root = gated_workspace(tmp_path, gate_toml("fixed", CHECK))
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    ran = [(e.gate, e.status) for e in events if isinstance(e, GateFinished)]
    assert ran == [("fixed", GateStatus.FAILED), ("fixed", GateStatus.PASSED)]
    (ended,) = [e for e in events if isinstance(e, RunCompleted)]
    assert ended.reason is TerminationReason.COMPLETED
    told = (root / ".ralph" / "dev-2.md").read_text()
    assert "`build.blocked`: Gate 'fixed' failed:" in told
    assert "MISSING: write fixed.txt" in told  # the end of the gate's output
    failed = next(e for e in events if isinstance(e, GateFinished))
    assert (root / failed.log_path).read_text().startswith("checking fixed.txt: MISSING")
    status = ralph("status", cwd=root)
    assert "2 run, 1 blocked, 0 warned" in status.stdout


def test_a_stopping_gate_ends_the_run_as_gate_failed(tmp_path: Path) -> None:
    root = gated_workspace(tmp_path, gate_toml("secrets", "import sys; sys.exit(3)", "stop"))
    result = ralph("run", cwd=root)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "gate_failed" in result.stdout + result.stderr
    (ended,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert ended.reason is TerminationReason.GATE_FAILED


def test_kill_during_a_gate_and_the_resume_runs_it_again(tmp_path: Path) -> None:
    """The gate sleeps the first time; ralph is killed with SIGKILL while it runs: the log
    holds its start, and the resume (after stopping the left-over process group) runs the
    gate again, which passes this time, and the run completes."""
    slow = (
        "import pathlib, sys, time\n"
        # Absolute: a pinned gate runs in a scratch worktree, not in the workspace.
        f"ran = pathlib.Path({str(tmp_path / 'ws' / '.ralph' / 'gate-ran')!r})\n"
        "if ran.exists(): sys.exit(0)\n"
        "ran.touch(); time.sleep(30)\n"
    )
    root = gated_workspace(tmp_path, gate_toml("slow", slow))
    process = start_ralph("run", cwd=root)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        started = any(isinstance(e, GateStarted) for e in events_so_far(root))
        if started and (root / ".ralph" / "gate-ran").exists():
            break
        time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("the gate never started")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    resumed = ralph("resume", cwd=root, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = stored_events(root)
    assert [e.gate for e in events if isinstance(e, GateStarted)] == ["slow", "slow"]
    assert [e.status for e in events if isinstance(e, GateFinished)] == [GateStatus.PASSED]


def test_a_gate_whose_program_is_missing_is_refused_before_anything_runs(tmp_path: Path) -> None:
    gates = '[[gates]]\nname = "lint"\nargv = ["no-such-linter-here", "--check"]\n'
    root = gated_workspace(tmp_path, gates)
    result = ralph("run", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "gates.0.argv: program 'no-such-linter-here' not found" in result.stderr
    assert events_so_far(root) == []


def test_an_iteration_gate_keeps_work_that_fails_it_out_of_every_commit(tmp_path: Path) -> None:
    """`on = ["iteration"]`: the first iteration's work fails the gate and is not committed;
    the developer, told why, does the work, the gate passes, and one commit takes it all."""
    gate = gate_toml("fixed", CHECK).replace("on_failure", 'on = ["iteration"]\non_failure')
    root = gated_workspace(tmp_path, gate)
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    ran = [(e.boundary, e.status) for e in events if isinstance(e, GateFinished)]
    assert ran == [
        (GateBoundary.ITERATION, GateStatus.FAILED),
        (GateBoundary.ITERATION, GateStatus.PASSED),
    ]
    commits = [i for i, e in enumerate(events) if isinstance(e, CommitCreated)]
    passed = [i for i, e in enumerate(events) if isinstance(e, GateFinished)][1]
    assert len(commits) == 1
    assert commits[0] > passed
    files = subprocess.run(
        ["git", "show", "--name-only", "--format=", "HEAD"],
        cwd=root,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sorted(files) == ["fixed.txt", "work.txt"]
    assert "`build.blocked`: Gate 'fixed' failed:" in (root / ".ralph" / "dev-2.md").read_text()


TOPIC_HATS = """
[loop]
starting_event = "build.start"

[hats.builder]
triggers = ["build.start", "build.blocked"]
publishes = ["review.ready"]

[hats.critic]
triggers = ["review.ready"]
publishes = ["LOOP_COMPLETE"]
"""

TOPIC_SCRIPT = """
[[hats.builder]]
write."app.txt" = "a first try"
emit = [["review.ready", "first try"]]

[[hats.builder]]
save_prompt = ".ralph/builder-2.md"
write."fixed.txt" = "fixed"
emit = [["review.ready", "fixed"]]

[[hats.critic]]
save_prompt = ".ralph/critic-1.md"
emit = [["LOOP_COMPLETE", "done"]]

[[commit_message]]
write.".agent/out/commit-message" = "Work of a hat"
"""


def test_a_topic_gate_keeps_a_refused_claim_from_the_next_hat(tmp_path: Path) -> None:
    """`on = ["topic:review.ready"]`: the builder's first review.ready fails the gate, so its
    work is not committed, the topic is dropped, and the builder (told why) works again; the
    critic is woken only by the review.ready that passed, and sees the fixed work."""
    gate = gate_toml("fixed", CHECK).replace(
        "on_failure", 'on = ["topic:review.ready"]\non_failure'
    )
    root = make_workspace(
        tmp_path / "ws",
        scripts={"script.toml": TOPIC_SCRIPT},
        agents={"main": scripted("script.toml")},
        budgets="max_iterations = 6\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
        extra=TOPIC_HATS + gate,
    )
    result = ralph("run", cwd=root)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    woken = [(e.hat, e.topic) for e in events if isinstance(e, HatActivated)]
    assert woken == [
        ("builder", "build.start"),
        ("builder", "build.blocked"),
        ("critic", "review.ready"),
    ]
    ran = [(e.boundary, e.status) for e in events if isinstance(e, GateFinished)]
    assert ran == [(GateBoundary.TOPIC, GateStatus.FAILED), (GateBoundary.TOPIC, GateStatus.PASSED)]
    told = (root / ".ralph" / "builder-2.md").read_text()
    assert "Not acted on, since the work was blocked: review.ready" in told
    assert "Gate 'fixed' failed" in told
    assert sum(isinstance(e, CommitCreated) for e in events) == 1  # only the work that passed


HUGE_BYTES = 6_000_000
"""One line longer than both the tail's window and the log's cap (the issue's case was 50 MB:
the behaviour is the same past the cap, and 6 MB keeps the test quick)."""

HUGE_LINE = (
    "import pathlib, sys\n"
    "ok = pathlib.Path('fixed.txt').exists()\n"
    "if not ok:\n"
    f"    sys.stdout.write('x' * {HUGE_BYTES} + ' the end: MISSING fixed.txt')\n"
    "sys.exit(0 if ok else 1)\n"
)
"""A gate that fails with megabytes of output on one line, its verdict at the line's end."""


def test_a_gate_failing_with_one_huge_line_shows_its_end_and_keeps_a_capped_log(
    tmp_path: Path,
) -> None:
    """A gate prints 6 MB on one line and fails: the developer's next prompt shows the end
    of that line, marked as cut, and the gate's log on disk is under the cap, with its start,
    its end and a line saying how many bytes were dropped between them."""
    root = gated_workspace(tmp_path, gate_toml("huge", HUGE_LINE))
    result = ralph("run", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    failed = next(e for e in events if isinstance(e, GateFinished))
    assert failed.status is GateStatus.FAILED
    assert failed.tail.endswith("the end: MISSING fixed.txt"), failed.tail[-200:]
    assert failed.tail.startswith(CUT_MARK)
    told = (root / ".ralph" / "dev-2.md").read_text()
    assert "the end: MISSING fixed.txt" in told
    log = root / failed.log_path
    assert log.stat().st_size <= LOG_CAP_BYTES
    kept = log.read_bytes()
    assert kept.startswith(b"x" * 1000)
    assert kept.endswith(b"x the end: MISSING fixed.txt")
    dropped = HUGE_BYTES + len(" the end: MISSING fixed.txt") - len(kept)
    assert b"[ralph: %d bytes of output dropped here" % (dropped + _note_length(kept)) in kept


def _note_length(kept: bytes) -> int:
    """The length of the note a capped log holds (it stands in for bytes of output)."""
    start = kept.index(b"\n[ralph: ")
    return kept.index(b"]\n", start) + 2 - start
