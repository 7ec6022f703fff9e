"""One run at a time per workspace: a second ``ralph run`` is refused, naming the run in
progress, and a run killed with SIGKILL leaves no lock behind (real ``ralph`` processes)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import uuid
from pathlib import Path

from tests.runtime.workspace import (
    hanging_developer,
    processes_with,
    ralph,
    start_ralph,
    wait_for_agent,
)


def _kill_all(marker: str) -> None:
    for pid in processes_with(marker):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(os.getpgid(pid), signal.SIGKILL)


def test_a_second_run_in_the_same_workspace_is_refused_naming_the_first(tmp_path: Path) -> None:
    """While a run's agent works, a second ``ralph run`` exits 1 at once with one line naming
    the run in progress (its id and pid) and how to stop it from here; the first run's agent
    is untouched and that run then finishes normally once its agent is released."""
    marker = f"ralph-lock-{uuid.uuid4().hex}"
    root = hanging_developer(tmp_path / "ws", marker)
    first = start_ralph("run", "--plain", cwd=root)
    try:
        wait_for_agent(first, marker)
        agents_before = processes_with(marker)
        second = ralph("run", cwd=root, timeout=60)
        assert second.returncode == 1, second.stdout + second.stderr
        message = second.stderr.strip()
        assert len(message.splitlines()) == 1, message
        assert "is busy" in message
        assert f"or ralph interrupt -C {root}) before starting another" in message
        assert f"(pid {first.pid})" in message
        found = re.search(r"run (\S+) \(pid", message)
        assert found is not None, message
        assert found.group(1) != "a", message  # the run's id, not "a run (its id not yet known)"
        # The refused run touched nothing: the first run's agent still works.
        assert processes_with(marker) == agents_before
        assert first.poll() is None
        first.send_signal(signal.SIGINT)
        stdout, stderr = first.communicate(timeout=60)
        assert first.returncode == 130, stdout + stderr
        assert found.group(1) in stdout
    finally:
        first.kill()
        _kill_all(marker)


def test_a_run_killed_with_sigkill_leaves_no_lock_behind(tmp_path: Path) -> None:
    """``ralph run`` killed with SIGKILL mid-run: ``ralph resume`` is not refused, and takes
    the run to completion."""
    marker = f"ralph-lock9-{uuid.uuid4().hex}"
    root = hanging_developer(tmp_path / "ws", marker)
    first = start_ralph("run", "--plain", cwd=root)
    try:
        wait_for_agent(first, marker)
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=60)
        assert (root / ".ralph" / "run.lock").exists()
        resumed = ralph("resume", cwd=root, timeout=120)
        assert "is busy" not in resumed.stderr
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "Exit status 0: completed" in resumed.stdout
    finally:
        first.kill()
        _kill_all(marker)


def test_workers_share_a_workspace_among_themselves_but_not_with_ralph_run(
    tmp_path: Path,
) -> None:
    """A worker's run holds the lock shared (leases decide between workers): another
    worker's hold succeeds, ``ralph run`` is refused naming the worker's run."""
    from pipeline.app.workspace._lock import hold_workspace

    root = hanging_developer(tmp_path / "ws", "unused")
    ralph_dir = root / ".ralph"
    with hold_workspace(ralph_dir, "worker-run", shared=True):
        with hold_workspace(ralph_dir, "taken-over", shared=True) as second:
            second.name_run("worker-run")
        refused = ralph("run", cwd=root, timeout=60)
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "run worker-run" in refused.stderr
