"""Provider limits end to end: real ``ralph run`` and ``ralph resume`` processes, a real git
repository, and an agent that prints what Claude Code prints when its five-hour window is
spent (``tests/fixtures/limits``), a few seconds from its reset. The run waits until the
reset the provider told of and goes on; killed with ``kill -9`` during the wait, the resumed
run waits until the same moment; ``on_usage_limit = "stop"`` stops it for a person."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.events import (
    HookRan,
    LimitResetAwaited,
    LimitScope,
    ProviderLimited,
    RunCompleted,
    TerminationReason,
    UsageWindowReported,
)
from tests.runtime.workspace import PYTHON, RALPH, make_workspace, stored_events

pytestmark = pytest.mark.slow  # whole runs, and waits of a few seconds

COUNTED = """
import json, pathlib, sys, time
sys.stdin.read()
calls = pathlib.Path(CALLS)
n = int(calls.read_text()) + 1 if calls.exists() else 1
calls.write_text(str(n))
"""
"""The start of each agent script: call ``n`` counted in the file ``CALLS``."""

DOES_THE_WORK = """
out = pathlib.Path(".agent/out")
out.mkdir(parents=True, exist_ok=True)
for name, text in (("plan.md", "1. do it"), ("status", "completed\\ndone"),
                   ("issues.md", ""), ("commit-message", "Do it")):
    (out / name).write_text(text)
with open("work.txt", "a") as work:
    work.write(f"call {n}\\n")
print(json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
    "usage": {"input_tokens": 10, "output_tokens": 2}, "num_turns": 1}))
"""
"""What a succeeding call does: each role's report, a change to commit, Claude's result line."""

AGENT = (
    COUNTED
    + """if n == 1:
    reset = int(time.time()) + DELAY
    info = {"status": "rejected", "resetsAt": reset, "rateLimitType": "five_hour"}
    print(json.dumps({"type": "system", "subtype": "init", "session_id": "s1"}))
    # What a tool printed is never read as a limit: only the CLI's own lines are.
    print(json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "content": "usage limit reached (429)"}]}}))
    print(json.dumps({"type": "rate_limit_event", "rate_limit_info": info}))
    print(json.dumps({"type": "result", "subtype": "success", "is_error": True,
        "api_error_status": 429, "api_error": "usage_limit_reached",
        "result": "You've hit your 5-hour limit", "usage": {"input_tokens": 0}}))
    sys.exit(1)
"""
    + DOES_THE_WORK
)


def limited_workspace(tmp_path: Path, delay_s: int, limits: str = "") -> Path:
    """A workspace whose agent's first invocation is limited until ``delay_s`` from then
    (``limits``: a ``[limits]`` table for ``ralph.toml``); the next one does the work."""
    script = tmp_path / "agent.py"
    body = AGENT.replace("CALLS", repr(str(tmp_path / "calls"))).replace("DELAY", str(delay_s))
    script.write_text(body)
    agent = [PYTHON, str(script)]
    budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 2"
    options = 'timeout_s = 60\ninactivity_timeout_s = 30\noutput_format = "claude-stream-json"'
    return make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": agent},
        budgets=budgets,
        agent_options=options,
        extra=limits,
    )


def _ralph(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RALPH, *args], cwd=root, capture_output=True, text=True, timeout=120)


def test_the_run_waits_until_the_reset_it_was_told_and_goes_on(tmp_path: Path) -> None:
    root = limited_workspace(tmp_path, delay_s=3)
    done = _ralph(root, "run")
    assert done.returncode == 0, done.stdout + done.stderr
    events = stored_events(root)
    (limited,) = [e for e in events if isinstance(e, ProviderLimited)]
    assert (limited.scope, limited.window, limited.source) == (
        LimitScope.USAGE_WINDOW,
        "five_hour",
        "claude rate_limit_event",
    )
    assert limited.resets_at is not None
    (awaited,) = [e for e in events if isinstance(e, LimitResetAwaited)]
    assert awaited.until == limited.resets_at
    assert awaited.at >= limited.resets_at
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED


def test_killed_during_the_wait_the_resumed_run_waits_until_the_same_moment(
    tmp_path: Path,
) -> None:
    # [notify] tells of the wait once, even though the resumed run waits again.
    notify = '[notify]\ncommand = ["sh", "-c", "cat >> .ralph/notified.jsonl"]\n'
    root = limited_workspace(tmp_path, delay_s=8, limits=notify)
    driver = subprocess.Popen(
        [*RALPH, "run"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        limited: list[ProviderLimited] = []
        told: list[HookRan] = []
        while not limited or not told:
            assert time.monotonic() < deadline, "the limit was never recorded"
            assert driver.poll() is None, "ralph ended before its agent was limited"
            time.sleep(0.2)
            try:
                events = stored_events(root)
            except Exception:  # the store is being made
                continue
            limited = [e for e in events if isinstance(e, ProviderLimited)]
            told = [e for e in events if isinstance(e, HookRan)]
        time.sleep(0.5)  # inside the wait
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=10)
    finally:
        if driver.poll() is None:
            driver.kill()
    reset = limited[0].resets_at
    assert reset is not None
    assert datetime.now(UTC) < reset, "the kill came after the reset: the test proves nothing"
    resumed = _ralph(root, "resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert datetime.now(UTC) >= reset
    events = stored_events(root)
    (awaited,) = [e for e in events if isinstance(e, LimitResetAwaited)]
    assert awaited.until == reset
    assert awaited.at >= reset
    assert [e.reason for e in events if isinstance(e, RunCompleted)] == [
        TerminationReason.COMPLETED
    ]
    notified = (root / ".ralph" / "notified.jsonl").read_text().splitlines()
    points = [json.loads(line)["point"] for line in notified]
    assert points == ["limit_wait", "run_end"]
    assert json.loads(notified[0])["limit_until"] == reset.isoformat()


def test_stop_stops_the_run_for_a_person_and_a_resume_goes_on(tmp_path: Path) -> None:
    root = limited_workspace(tmp_path, delay_s=1, limits='[limits]\non_usage_limit = "stop"\n')
    stopped = _ralph(root, "run")
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    said = " ".join((stopped.stdout + stopped.stderr).split())
    assert "PROVIDER_LIMIT" in said
    assert "ralph resume once it has reset" in said
    assert not [e for e in stored_events(root) if isinstance(e, LimitResetAwaited)]
    time.sleep(1.2)
    resumed = _ralph(root, "resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


WINDOW_AGENT = (
    COUNTED
    + """if n == 1:
    window = {"utilization": 0.95, "resetsAt": int(time.time()) + 3600, "status": "allowed_warning"}
    info = {"status": "allowed_warning", "rateLimitType": "five_hour",
            "unifiedWindows": {"five_hour": window}}
    print(json.dumps({"type": "rate_limit_event", "rate_limit_info": info}))
"""
    + DOES_THE_WORK
)


def test_a_window_past_stop_at_utilization_stops_the_run_and_a_resume_goes_on(
    tmp_path: Path,
) -> None:
    """The planner's provider says its five-hour window is 95% full: with
    ``stop_at_utilization = 0.9`` the run stops for a person before the next agent starts,
    keeping the plan; resumed, it goes on to the end."""
    script = tmp_path / "agent.py"
    script.write_text(WINDOW_AGENT.replace("CALLS", repr(str(tmp_path / "calls"))))
    options = 'timeout_s = 60\ninactivity_timeout_s = 30\noutput_format = "claude-stream-json"'
    root = make_workspace(
        tmp_path / "ws",
        scripts={},
        agents={"main": [PYTHON, str(script)]},
        budgets="max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 2",
        agent_options=options,
        extra="[limits]\nstop_at_utilization = 0.9\n",
    )
    stopped = _ralph(root, "run")
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    said = " ".join((stopped.stdout + stopped.stderr).split())
    assert "five_hour window 95% full" in said
    (reported,) = [e for e in stored_events(root) if isinstance(e, UsageWindowReported)]
    assert (reported.window, reported.utilization) == ("five_hour", 0.95)
    assert (tmp_path / "calls").read_text() == "1"  # no agent started after the report
    resumed = _ralph(root, "resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
