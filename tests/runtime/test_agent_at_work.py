"""An agent at work is in the log: InvocationStarted is recorded before the agent's process
starts, so another terminal sees it, and a kill -9 mid-agent leaves a trace of the attempt."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import orjson
import pytest

from pipeline.events import InvocationStarted, PipelineEvent, Role, RunResumed
from tests.faults.commits import commits_in_git
from tests.runtime.workspace import (
    hanging_developer,
    processes_with,
    ralph,
    start_ralph,
    stored_events,
    wait_for,
    wait_for_agent,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def _developer_starts(events: list[PipelineEvent]) -> list[tuple[int, InvocationStarted]]:
    return [
        (i, e)
        for i, e in enumerate(events)
        if isinstance(e, InvocationStarted) and e.role is Role.DEVELOPER
    ]


def test_another_terminal_sees_the_agent_at_work_and_a_kill_leaves_its_trace(
    tmp_path: Path,
) -> None:
    """While the developer hangs, ``ralph events --format jsonl`` (another process) ends with
    its InvocationStarted and nothing after it. kill -9 of ralph there: the log keeps that
    start; ``ralph resume`` stops the agent left behind, runs the same attempt again (same
    number, not counted as a failure) and completes, with every step committed once."""
    marker = f"ralph-at-work-{uuid.uuid4().hex}"
    root = hanging_developer(tmp_path / "ws", marker)
    run = start_ralph("run", cwd=root)
    try:
        wait_for_agent(run, marker)
        seen = ralph("events", "--format", "jsonl", cwd=root)
        assert seen.returncode == 0, seen.stderr
        last = orjson.loads(seen.stdout.splitlines()[-1])
        assert last["type"] == "agent.invocation_started"
        assert last["role"] == "developer"
        os.kill(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
    finally:
        run.kill()
    before = stored_events(root)
    assert isinstance(before[-1], InvocationStarted)
    assert before[-1].role is Role.DEVELOPER
    resumed = ralph("resume", cwd=root, timeout=180)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    wait_for(lambda: not processes_with(marker), "the agent outlived the resume", within_s=0.2)
    events = stored_events(root)
    starts = _developer_starts(events)
    (cut, first), (_, again) = starts[0], starts[1]
    assert isinstance(events[cut + 1], RunResumed), (
        "the cut-short attempt is followed by the resume"
    )
    assert again.attempt == first.attempt
    assert not any("previous attempt reported no outcome" in str(e) for e in events)
    effects = [effect for _, effect in commits_in_git(root)]
    assert effects, "the resumed run committed its work"
    assert len(effects) == len(set(effects)), "a step was committed twice"
