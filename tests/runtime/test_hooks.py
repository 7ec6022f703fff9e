"""Lifecycle hooks and notifications in real runs: a blocking hook stops a commit, a
suspending one pauses the run resumably and runs again on resume, a blocking one at the
start stops the run, every hook gets the run's news as JSON on its standard input and its
runs are facts, and ``[notify]`` runs once per event even across a resume."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from pipeline.core.state import Phase
from pipeline.events import (
    CommitCreated,
    GateStatus,
    HookPoint,
    HookRan,
    RunCompleted,
    TerminationReason,
)
from pipeline.reducers import fold
from tests.runtime.test_loop_control import QUESTION, _pending, workspace
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    stored_events,
    wait_for,
)

# Whole runs in subprocesses, seconds a test; the fast loop has their decisions from
# tests/reducers/test_hooks.py (each hook's decision at each point, across resumes, and the budgets
# law).
pytestmark = pytest.mark.slow


def _hook(
    name: str, point: str, check: str, on_error: str, timeout: int = 30, root: Path | None = None
) -> str:
    """A hook that keeps the JSON it was given, then runs ``check`` (its exit status is the
    hook's). A blocking one runs in the pinned gates' scratch worktree, not in the workspace
    ``root``: it keeps the JSON at ``root``'s absolute path."""
    keep = ".ralph/hook-input.jsonl" if root is None else f"{root}/.ralph/hook-input.jsonl"
    argv = ["sh", "-c", f"cat >> {keep}; {check}"]
    command = f"command = {json.dumps(argv)}"
    return (
        f'[[hooks]]\nname = "{name}"\npoint = "{point}"\n{command}\n'
        f'on_error = "{on_error}"\ntimeout_s = {timeout}\n'
    )


def _inputs(root: Path) -> list[dict[str, object]]:
    path = root / ".ralph" / "hook-input.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


BLOCKED_THEN_CLEAN = """
[[development]]
write."work.txt" = "first try"
write."secret.key" = "AKIA-not-really"
write.".agent/out/status" = "completed\\ndone"
[[development]]
save_prompt = ".ralph/second-prompt.md"
write."work.txt" = "second try"
write."secret.key" = ""
write.".agent/out/status" = "completed\\ndone"
"""
"""Iteration 1 leaves a key file with content; iteration 2 empties it."""


def test_a_blocking_hook_stops_a_commit_and_the_work_goes_back_to_the_developer(
    tmp_path: Path,
) -> None:
    check = 'test ! -s secret.key || { echo "secret.key holds a key"; exit 1; }'
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": BLOCKED_THEN_CLEAN + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        budgets="max_iterations = 3\nmax_review_passes = 0\nbackoff_base_ms = 10",
        extra=_hook("no-keys", "before_commit", check, "block", root=tmp_path / "ws"),
    )
    run = ralph("run", "--plain", cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    events = stored_events(root)
    ran = [e for e in events if isinstance(e, HookRan)]
    assert [(e.hook, e.point, e.status) for e in ran] == [
        ("no-keys", HookPoint.BEFORE_COMMIT, GateStatus.FAILED),
        ("no-keys", HookPoint.BEFORE_COMMIT, GateStatus.PASSED),
    ]
    assert "secret.key holds a key" in ran[0].tail
    # No commit ever held the key; the blocked work reached the next commit, fixed.
    log = _git(root, "log", "--format=%H")
    for sha in log.split():
        content = (
            _git(root, "show", f"{sha}:secret.key")
            if "secret.key" in _git(root, "ls-tree", "--name-only", sha)
            else ""
        )
        assert "AKIA" not in content
    # The first commit came only after the hook passed.
    first_commit = next(i for i, e in enumerate(events) if isinstance(e, CommitCreated))
    assert events.index(ran[1]) < first_commit
    second = (root / ".ralph" / "second-prompt.md").read_text()
    assert "build.blocked" in second
    assert "Hook 'no-keys' (before_commit) failed" in second
    (told,) = [i for i in _inputs(root) if i["point"] == "before_commit"][:1]
    assert told["hook"] == "no-keys"
    assert told["run_id"] == fold(events).run.run_id  # type: ignore[union-attr]
    state = fold(events)
    assert state.hooks.blocked == 1
    assert state.termination is TerminationReason.COMPLETED


def test_a_suspending_hook_pauses_the_run_resumably_and_runs_again_on_resume(
    tmp_path: Path,
) -> None:
    """While ``.ralph/hold`` exists the hook fails: the run stops before its first agent
    invocation, exit 3, ``suspended``; once the file is gone ``ralph resume`` runs the hook
    again, it passes, and the run completes."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=_hook("hold", "before_invocation", "test ! -e .ralph/hold", "suspend"),
    )
    (root / ".ralph" / "hold").write_text("")
    suspended = ralph("run", "--plain", cwd=root)
    assert suspended.returncode == 3, suspended.stdout + suspended.stderr
    state = fold(stored_events(root))
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.SUSPENDED
    assert "Hook 'hold' (before_invocation) failed" in (state.ledger.last_error or "")
    status = ralph("status", cwd=root)
    assert "suspended" in status.stdout
    again = ralph("resume", "--plain", cwd=root)
    assert again.returncode == 3, again.stdout + again.stderr  # still held: suspended again
    (root / ".ralph" / "hold").unlink()
    resumed = ralph("resume", "--plain", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    events = stored_events(root)
    statuses = [e.status for e in events if isinstance(e, HookRan)]
    assert statuses[:3] == [GateStatus.FAILED, GateStatus.FAILED, GateStatus.PASSED]
    assert all(s is GateStatus.PASSED for s in statuses[2:])
    assert isinstance(events[-1], RunCompleted)


def test_a_blocking_hook_at_the_start_stops_the_run_before_any_agent(tmp_path: Path) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=_hook(
            "office-hours", "run_start", "echo closed; exit 4", "block", root=tmp_path / "ws"
        ),
    )
    run = ralph("run", "--plain", cwd=root)
    assert run.returncode == 1, run.stdout + run.stderr
    events = stored_events(root)
    state = fold(events)
    assert state.termination is TerminationReason.HOOK_BLOCKED
    assert not any(type(e).__name__ == "InvocationStarted" for e in events)
    (ran,) = [e for e in events if isinstance(e, HookRan)]
    assert (ran.exit_code, ran.tail.strip()) == (4, "closed")


def test_notify_runs_once_per_event_even_across_a_resume(tmp_path: Path) -> None:
    """A question is asked: notify runs; the run is interrupted while it waits and resumed,
    still waiting on the same question: notify does not run again; answered, the run ends:
    notify runs once more, for the end. Each got the news as JSON."""
    notify = '[notify]\ncommand = ["sh", "-c", "cat >> .ralph/notified.jsonl"]\n'
    root = workspace(tmp_path, QUESTION, loop="human_timeout_s = 120", hats=notify)
    notified = root / ".ralph" / "notified.jsonl"
    first = start_ralph("run", cwd=root)
    try:
        _run_id, question = _pending(root)
        wait_for(
            lambda: notified.exists() and notified.read_text().count("\n") >= 1,
            "notify never ran",
            within_s=30,
        )
        first.send_signal(signal.SIGINT)
        assert first.wait(timeout=30) == 130
    finally:
        first.kill()
    second = start_ralph("resume", cwd=root)
    try:
        _pending(root)
        answered = ralph("respond", "PostgreSQL", "--question", question.question_id, cwd=root)
        assert answered.returncode == 0, answered.stderr
        assert second.wait(timeout=60) == 0, second.communicate()
    finally:
        second.kill()
    lines = [json.loads(line) for line in notified.read_text().splitlines()]
    assert [line["point"] for line in lines] == ["question_asked", "run_end"]
    assert lines[0]["question"] == "Which database should I use?"
    assert lines[0]["question_id"] == question.question_id
    assert lines[1]["termination"] == "completed"


FAILING_ONCE = """
[[planning]]
exit = 1
[[planning]]
write.".agent/out/plan.md" = "1. do it"
"""
"""The planner's first invocation fails (exit 1); its retry plans."""


def test_after_invocation_and_on_failure_hooks_watch_every_invocation(tmp_path: Path) -> None:
    """``after_invocation`` runs after each invocation, ``on_failure`` after the one that
    failed; both get the run's news, and the run goes on."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FAILING_ONCE + FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=_hook("after", "after_invocation", "true", "warn")
        + _hook("failed", "on_failure", "exit 1", "warn"),
    )
    run = ralph("run", "--plain", cwd=root)
    assert run.returncode == 0, run.stdout + run.stderr
    events = stored_events(root)
    invocations = sum(type(e).__name__ == "InvocationStarted" for e in events)
    ran = [e for e in events if isinstance(e, HookRan)]
    assert [e.point for e in ran].count(HookPoint.AFTER_INVOCATION) == invocations
    (failed,) = [e for e in ran if e.point is HookPoint.ON_FAILURE]
    assert failed.status is GateStatus.FAILED  # a watching hook's failure: counted only
    state = fold(events)
    assert state.hooks.warned == 1
    assert "ralph.hook_warning" not in {n.topic for n in state.intake.notices}
    told = [i for i in _inputs(root) if i["point"] == "on_failure"]
    assert [(i["role"], i["attempt"]) for i in told] == [("planner", 1)]
