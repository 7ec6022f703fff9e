"""Signals that come while a run shuts down, or after it completed, keep the run's exit code
(130 interrupted, 0 complete) instead of killing ``ralph`` (-15)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    RALPH,
    ROOT,
    hanging_developer,
    make_workspace,
    scripted,
    wait_for_agent,
)


def _start(root: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*RALPH, "run", *args],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _signal_until_it_exits(run: subprocess.Popen[str], signum: signal.Signals) -> int:
    """Send ``signum`` every 2 ms until the process ends (it must, within 60 s)."""
    deadline = time.monotonic() + 60
    while run.poll() is None:
        assert time.monotonic() < deadline, "ralph never exited"
        try:
            run.send_signal(signum)
        except ProcessLookupError:
            break
        time.sleep(0.002)
    return run.wait(timeout=10)


def test_sigterm_again_and_again_during_shutdown_still_exits_130(tmp_path: Path) -> None:
    """One SIGTERM while the agent works, then SIGTERM after SIGTERM through the whole
    shutdown (interruption fact, checkpoint, summary, exit): the run's code, 130."""
    marker = f"ralph-shutdown-{uuid.uuid4().hex}"
    root = hanging_developer(tmp_path / "ws", marker)
    run = _start(root)
    try:
        wait_for_agent(run, marker)
        code = _signal_until_it_exits(run, signal.SIGTERM)
    finally:
        run.kill()
    assert code == 130, run.communicate()


def test_sigterm_right_after_completion_exits_0(tmp_path: Path) -> None:
    """SIGTERM after SIGTERM from the moment the completion fact is printed: exit 0."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
    )
    run = _start(root, "--json-logs")
    assert run.stdout is not None
    try:
        for line in run.stdout:
            if '"lifecycle.run_completed"' in line:
                break
        else:
            raise AssertionError(f"the run never completed: {run.communicate()}")
        code = _signal_until_it_exits(run, signal.SIGTERM)
    finally:
        run.kill()
    assert code == 0, run.communicate()
