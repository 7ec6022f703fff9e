"""A disk that fills under a run: the run stops with the store-error exit, naming the file and
saying the disk is full, leaves no temporary file behind, and resumes to its end once there is
room, every commit made once (a real ``ralph demo`` under a file size limit: SQLite's writes
fail as they would on a full disk)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import RALPH, ROOT, ralph

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

_LIMIT = 150_000
"""Bytes any file of the run may grow to: the store's write-ahead log passes it mid-run."""


def _limited() -> None:
    # In the child before exec: a write past the limit fails (EFBIG) instead of killing it.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (_LIMIT, _LIMIT))


def test_a_full_disk_stops_the_run_cleanly_and_it_resumes_once_there_is_room(
    tmp_path: Path,
) -> None:
    """Exit 4 with the file and the cause named, no traceback, no ``*.tmp`` left; then a
    resume completes, ``replay --verify`` agrees with git, and no step was committed twice."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}
    stopped = subprocess.run(
        [*RALPH, "demo", "run"],
        cwd=tmp_path,
        env=env,
        preexec_fn=_limited,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    root = tmp_path / "run"
    store = WorkspaceLayout(root).store
    assert stopped.returncode == 4, (stopped.stdout[-2000:], stopped.stderr)
    assert str(store) in stopped.stderr
    assert "the disk is full" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    assert "Exit status 0" not in stopped.stdout
    assert sorted(p.name for p in tmp_path.rglob("*.tmp")) == []

    resumed = ralph("resume", "--plain", cwd=root, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr
    assert "Exit status 0: completed" in resumed.stdout
    verified = ralph("replay", "--verify", cwd=root)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    trailers = subprocess.run(
        ["git", "log", "--format=%(trailers:key=Ralph-Effect,valueonly)"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert trailers, "the run committed nothing"
    assert len(trailers) == len(set(trailers)), trailers
