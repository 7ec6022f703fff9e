"""What agents and gates leave behind ends with them, through real ``ralph run`` processes with
the sandbox off (what ``auto`` becomes where bubblewrap is missing): a setsid writer an agent
started no longer changes the work tree once the run has ended, and a gate that exits 0 leaving
a child printing without end passes at once, by its own status, not at its timeout."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.events import GateFinished, GateStatus, RunCompleted, TerminationReason
from tests.runtime.workspace import (
    RALPH,
    ROOT,
    SHELL_REPORTS,
    hanging_developer,
    make_workspace,
    processes_with,
    ralph,
    stored_events,
    wait_for,
    wait_for_agent,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test


def writer(noted: Path) -> str:
    """Shell lines that leave a writer in a session of its own appending to ``ticks.txt`` in
    the work tree (its pid noted in ``noted``, outside the work tree)."""
    return (
        f"setsid sh -c 'echo $$ >> {noted}; while :; do date >> ticks.txt; sleep 0.05; done' "
        "</dev/null >/dev/null 2>&1 &\n"
        "while [ ! -s ticks.txt ]; do sleep 0.01; done\n"
    )


def _gone(pid: int, within_s: float = 2.0) -> bool:
    """Whether ``pid`` is dead (or a zombie) now or within ``within_s``."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _tree(root: Path) -> dict[str, str]:
    """Every file of the work tree outside ``.git``, by its content's digest."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def _kill_noted(path: Path) -> None:
    """End the pids noted in ``path``, so that a failing test leaves no writer behind."""
    if path.exists():
        for line in path.read_text().split():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(line), 9)


def test_a_setsid_writer_left_by_an_agent_stops_with_the_run_when_the_sandbox_is_off(
    tmp_path: Path,
) -> None:
    """After ``ralph run`` has ended, nothing an agent started (here a setsid writer) changes
    the work tree any more: the tree a moment after the run equals the tree at its end."""
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\n{writer(tmp_path / 'writers')}{SHELL_REPORTS}")
    script.chmod(0o755)
    budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 0"
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(script)]},
        budgets=budgets,
        sandbox='mode = "off"',
    )
    try:
        done = ralph("run", cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr
        ended = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
        assert [e.reason for e in ended] == [TerminationReason.COMPLETED]
        at_the_end = _tree(root)
        assert "ticks.txt" in at_the_end
        time.sleep(1.0)
        assert _tree(root) == at_the_end, "something the agent left kept writing"
        assert all(_gone(int(pid)) for pid in (tmp_path / "writers").read_text().split())
    finally:
        _kill_noted(tmp_path / "writers")


def test_a_gate_leaving_a_chatty_child_passes_by_its_own_status_without_waiting(
    tmp_path: Path,
) -> None:
    """A gate that exits 0 leaving a child that prints without end is recorded ``passed`` as
    soon as it exits (well under its 60 s timeout), and the child does not outlive it."""
    pid_file = tmp_path / "ticker.pid"
    code = (
        "import subprocess, sys\n"
        "child = subprocess.Popen(['sh', '-c', 'while :; do echo tick; sleep 0.01; done'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('gate checked')\n"
    )
    gate = (
        f'[[gates]]\nname = "chatty"\nargv = ["{sys.executable}", "-c", """{code}"""]\n'
        'timeout_s = 60\non_failure = "block"\n'
    )
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\n{SHELL_REPORTS}")
    script.chmod(0o755)
    budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 0"
    make_workspace(root, scripts={}, agents={"main": [str(script)]}, budgets=budgets, extra=gate)
    try:
        done = ralph("run", cwd=root)
        assert done.returncode == 0, done.stdout + done.stderr
        finished = [e for e in stored_events(root) if isinstance(e, GateFinished)]
        assert finished, "the gate never ran"
        for gate_end in finished:
            # Each gate's own time, as ralph measured it: a gate held by its child would be
            # cut at its 60 s timeout. Half of that is "at once" even on a loaded machine,
            # where the whole run's wall time says more about the load than about the gate.
            assert gate_end.status is GateStatus.PASSED
            assert gate_end.duration_ms < 30_000, gate_end
        assert _gone(int(pid_file.read_text()))
    finally:
        _kill_noted(pid_file)


def test_a_kill_9_of_ralph_takes_its_agent_along_when_the_sandbox_is_off(tmp_path: Path) -> None:
    """``ralph run`` killed with SIGKILL while its agent (with a child) hangs: the agent and
    its child end with it, as a sandboxed agent does, and ``ralph resume`` completes."""
    marker = f"ralph-dies-with-{os.getpid()}-{time.monotonic_ns()}"
    root = hanging_developer(tmp_path / "ws", marker)
    run = subprocess.Popen(
        [*RALPH, "run", "--quiet"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_agent(run, marker)
        run.send_signal(signal.SIGKILL)
        run.wait(timeout=30)
        wait_for(lambda: not processes_with(marker), "the agent outlived ralph", within_s=5)
    finally:
        run.kill()
        for pid in processes_with(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    resumed = ralph("resume", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Exit status 0: completed" in resumed.stdout
