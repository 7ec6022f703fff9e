"""A sample of the fault-injection sweep (``python -m tests.faults.sweep`` runs it all):
kill -9, SIGINT and SIGTERM inside an agent, at a checkpoint, in a wait for a person, in a
rebase and in dev-fix (the commit step's points are in ``test_commit_once.py``); each run
resumed to its end with every invariant."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.faults.sweep import SAMPLE, SCENARIOS, run_trial
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    RALPH,
    ROOT,
    make_workspace,
    ralph,
    scripted,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


@pytest.mark.parametrize("name", SAMPLE)
def test_a_run_stopped_by_a_fault_resumes_to_the_same_end(tmp_path: Path, name: str) -> None:
    """The fault stops the run; resumed, it ends with its expected code, every commit git
    holds is in its log once, and ``replay --verify`` passes."""
    (scenario,) = [s for s in SCENARIOS if s.name == name]
    trial = run_trial(scenario, tmp_path)
    assert trial.problems == (), trial


def test_a_malformed_fault_variable_is_a_usage_error(tmp_path: Path) -> None:
    """``RALPH_FAULT_INJECT`` naming no fact kind: exit 2 before any run starts."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RALPH_FAULT_INJECT": "no.such:1:SIGKILL"}
    done = subprocess.run(
        [*RALPH, "run"], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "RALPH_FAULT_INJECT" in done.stderr
    assert ralph("status", cwd=root).returncode != 0, "a run started"
