"""An agent left running by a driver killed with kill -9 is stopped before the next agent
starts in the same workspace; a record that no longer names that agent stops nothing."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from pipeline.handlers.agents import ProcessSpec, run_process
from pipeline.handlers.agents._groups import record_group, stop_recorded_group
from pipeline.handlers.agents._reaper import reaper_argv

ROOT = Path(__file__).resolve().parents[3]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose: it holds no files and runs nothing.
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state != "Z"


def _reaped(process: subprocess.Popen[Any]) -> subprocess.Popen[Any]:
    """``process``, waited for in a thread so that it is reaped the moment it exits.

    A recorded group's leader is never the stopping ralph's own child (it was an earlier
    ralph's): once it exits, init or a subreaper reaps it. Here the test started it: left a
    zombie, it would still count as a member of its group, which would then stay alive to
    ``killpg(pgid, 0)`` through the grace period and the reaper's five seconds (six seconds
    of waiting a test, for nothing the test checks)."""
    threading.Thread(target=process.wait, daemon=True).start()
    return process


def _wait_gone(pid: int, timeout_s: float = 10) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def test_the_agent_of_a_killed_driver_is_stopped_before_the_next_one_starts(
    tmp_path: Path,
) -> None:
    """A driver runs an agent (which starts a child of its own), and the driver and the
    agent's reaper are killed with SIGKILL (as when the whole machine's processes are): the
    agent and its child stay running. The next run_process with the same group file stops
    them first."""
    group_file = tmp_path / "agent-group.json"
    pids = tmp_path / "pids"
    agent = textwrap.dedent(
        f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(300)
        """
    )
    driver = textwrap.dedent(
        f"""
        from pathlib import Path
        from pipeline.handlers.agents import ProcessSpec, run_process
        run_process(ProcessSpec(
            argv=({sys.executable!r}, "-c", {agent!r}),
            cwd=Path({str(tmp_path)!r}),
            env={{}},
            output_path=Path({str(tmp_path / "out.log")!r}),
            group_file=Path({str(group_file)!r}),
        ))
        """
    )
    killed = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (pids.exists() and pids.read_text()):
        assert time.monotonic() < deadline, "the agent never started"
        time.sleep(0.02)
    agent_pid, child_pid = (int(p) for p in pids.read_text().split())
    reaper = os.getpgid(agent_pid)  # the group's leader; the driver's death would end it all
    os.kill(reaper, signal.SIGKILL)
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    time.sleep(0.3)
    assert group_file.exists()
    assert _alive(agent_pid)
    assert _alive(child_pid)
    result = run_process(
        ProcessSpec(
            argv=("true",),
            cwd=tmp_path,
            env=dict(os.environ),
            output_path=tmp_path / "next.log",
            grace_s=1,
            group_file=group_file,
        )
    )
    assert result.exit_code == 0
    assert _wait_gone(agent_pid)
    assert _wait_gone(child_pid)
    assert not group_file.exists(), "a finished agent's record is forgotten"


def test_a_record_whose_process_id_was_recycled_stops_nothing(tmp_path: Path) -> None:
    """The recorded group's leader is alive but started at another time (the id belongs to
    someone else now): it is left alone, and the record forgotten."""
    bystander = _reaped(
        subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
        )
    )
    try:
        group_file = tmp_path / "agent-group.json"
        record_group(group_file, bystander.pid)
        record = orjson.loads(group_file.read_bytes())
        group_file.write_bytes(orjson.dumps({**record, "started": record["started"] - 1}))
        assert stop_recorded_group(group_file, grace_s=0.1) is None
        assert _alive(bystander.pid)
        assert not group_file.exists()
        record_group(group_file, bystander.pid)
        assert stop_recorded_group(group_file, grace_s=1) == bystander.pid
        assert bystander.wait(timeout=10) == -signal.SIGTERM
    finally:
        bystander.kill()
        bystander.wait()


def test_a_record_of_a_gone_group_or_another_host_stops_nothing(tmp_path: Path) -> None:
    """A group that has exited, a record from another host and an unreadable record are
    each forgotten without stopping anything."""
    group_file = tmp_path / "agent-group.json"
    finished = subprocess.Popen(["true"], start_new_session=True)
    finished.wait()
    record_group(group_file, finished.pid)
    assert stop_recorded_group(group_file, grace_s=0.1) is None
    elsewhere = {"host": "not-this-host", "boot": "", "pgid": os.getpgid(0), "started": 0}
    group_file.write_bytes(orjson.dumps(elsewhere))
    assert stop_recorded_group(group_file, grace_s=0.1) is None
    assert not group_file.exists()
    group_file.write_text("{not json")
    assert stop_recorded_group(group_file, grace_s=0.1) is None
    assert not group_file.exists()


def test_a_driver_killed_with_sigkill_takes_its_command_and_all_it_started_along(
    tmp_path: Path,
) -> None:
    """A driver killed with SIGKILL while its command (deaf to SIGTERM) runs with a setsid
    child: both end at once, before any next start (the reaper's parent-death signal, as
    bwrap's ``--die-with-parent`` in the sandbox)."""
    agent = (
        "trap '' TERM; echo $$ > agent.pid\n"
        "setsid sh -c 'echo $$ > escaped.pid; while :; do sleep 0.05; done' &\n"
        "while :; do sleep 0.1; done\n"
    )
    driver = textwrap.dedent(
        f"""
        from pathlib import Path
        from pipeline.handlers.agents import ProcessSpec, run_process
        run_process(ProcessSpec(
            argv=("/bin/sh", "-c", {agent!r}),
            cwd=Path({str(tmp_path)!r}),
            env={{"PATH": "/usr/bin:/bin"}},
            output_path=Path({str(tmp_path / "out.log")!r}),
        ))
        """
    )
    killed = subprocess.Popen([sys.executable, "-c", driver], cwd=ROOT)
    pids = _wait_for_pids(tmp_path, "agent.pid", "escaped.pid")
    try:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        for pid in pids:
            assert _wait_gone(pid, 5), f"{pid} outlived its killed driver"
    finally:
        _kill(pids)


def test_a_recorded_reaper_deaf_to_sigterm_is_stopped_with_what_escaped_its_group(
    tmp_path: Path,
) -> None:
    """A recorded group whose command ignores SIGTERM and left a setsid process (ignoring it
    too) outside the group: stopping the record ends both, through the group's reaper,
    where SIGKILL to the group alone would leave the escaped one running."""
    group_file = tmp_path / "agent-group.json"
    agent = (
        "trap '' TERM; echo $$ > agent.pid\n"
        "setsid sh -c 'echo $$ > escaped.pid; while :; do sleep 0.05; done' &\n"
        "while :; do sleep 0.1; done\n"
    )
    read, write = os.pipe()
    reaper = _reaped(
        subprocess.Popen(
            reaper_argv(write, os.environ, ("/bin/sh", "-c", agent)),
            cwd=tmp_path,
            start_new_session=True,
            pass_fds=(write,),
            stdout=subprocess.DEVNULL,
        )
    )
    os.close(write)
    record_group(group_file, reaper.pid)
    pids = _wait_for_pids(tmp_path, "agent.pid", "escaped.pid")
    try:
        assert stop_recorded_group(group_file, 0.5) == reaper.pid
        reaper.wait(timeout=10)
        for pid in pids:
            assert _wait_gone(pid), f"{pid} outlived the stop"
    finally:
        os.close(read)
        _kill(pids)


def _wait_for_pids(folder: Path, *names: str) -> list[int]:
    """The pids the files ``names`` in ``folder`` hold, once all are written."""
    deadline = time.monotonic() + 30
    while not all((folder / n).exists() and (folder / n).read_text() for n in names):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    return [int((folder / n).read_text()) for n in names]


def _kill(pids: list[int]) -> None:
    """SIGKILL ``pids``, so that a failing test leaves nothing running."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
