"""SIGINT and SIGTERM during an agent invocation: clean stop, no orphan, resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from pipeline.core.serialization import decode_state
from pipeline.core.state import Phase, TerminationReason
from tests.runtime.workspace import (
    PYTHON,
    RALPH,
    ROOT,
    hanging_developer,
    make_workspace,
    processes_with,
    ralph,
    scripted,
    then_finish,
    wait_for,
    wait_for_agent,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_an_agent_stops_its_group_and_resume_finishes(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """The agent (and its child) are gone, the run exits 130 interrupted with a checkpoint,
    and ``ralph resume`` takes it from there to completion."""
    marker = f"ralph-sigint-{uuid.uuid4().hex}"
    script = then_finish(
        "development",
        f"""
[[development]]
print = "thinking hard..."
spawn = ["{PYTHON}", "-c", "import time; time.sleep(300)", "{marker}"]
hang = true
""",
    )
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": script}, agents={"main": scripted("s.toml")}
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [*RALPH, "run"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for_agent(run, marker)
        run.send_signal(signum)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130, stdout + stderr
    assert "Resume it: ralph resume" in stdout
    wait_for(lambda: not processes_with(marker), "the agent's group outlived the run", within_s=0.2)
    replayed = ralph("replay", "--verify", "--json", cwd=root)
    assert replayed.returncode == 0, replayed.stderr
    state = decode_state(replayed.stdout.splitlines()[0].encode())
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.INTERRUPTED
    assert state.ledger.last_error == f"interrupted: {signum.name}"
    assert state.checkpoints.due is None

    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Exit status 0: completed" in resumed.stdout
    final = decode_state(ralph("replay", "--json", cwd=root).stdout.splitlines()[0].encode())
    assert final.phase is Phase.COMPLETE
    assert final.ledger.resumes == 1


def test_after_kill_9_resume_stops_the_agent_the_dead_run_left_behind(tmp_path: Path) -> None:
    """``ralph run`` and the agent's reaper killed with SIGKILL while the agent hangs (the
    reaper alone would take the agent along): the agent and its child outlive them (they
    lead their own group). ``ralph resume`` stops them before invoking the agent again, and
    finishes the run."""
    marker = f"ralph-kill9-{uuid.uuid4().hex}"
    root = hanging_developer(tmp_path / "ws", marker)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.Popen(
        [*RALPH, "run", "--quiet"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_agent(run, marker)
        os.kill(os.getpgid(processes_with(marker)[0]), signal.SIGKILL)  # the group's reaper
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
    finally:
        run.kill()
    time.sleep(0.3)
    left_behind = processes_with(marker)
    assert left_behind, "kill -9 took the agent's group with it (nothing to test)"
    assert (root / ".ralph" / "agent-group.json").exists()
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Exit status 0: completed" in resumed.stdout
    assert processes_with(marker) == [], "the dead run's agent was never stopped"
    assert not (root / ".ralph" / "agent-group.json").exists()
