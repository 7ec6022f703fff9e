"""Agent processes through real subprocesses: prompts arrive intact, timeouts stop the whole
process group, and nothing is left running."""

from __future__ import annotations

import hashlib
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pipeline.events import TimeoutKind
from pipeline.handlers.agents import ProcessSpec, run_process


def _script(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


def _spec(tmp_path: Path, *argv: str, **overrides: object) -> ProcessSpec:
    values: dict[str, object] = {
        "argv": tuple(argv),
        "cwd": tmp_path,
        "env": dict(os.environ),
        "output_path": tmp_path / "output.log",
    }
    values.update(overrides)
    return ProcessSpec(**values)  # type: ignore[arg-type]


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (None: no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped is dead)."""
    return _state(pid) not in (None, "Z", "X")


def _dies_soon(pid: int, within_s: float = 30.0) -> bool:
    """Whether ``pid`` is dead now or within ``within_s``: a SIGKILL is delivered
    asynchronously, so a process killed a moment ago may still be on its way out (the wait
    ends as soon as it is dead; its bound is for a loaded machine, the processes here would
    live for minutes)."""
    deadline = time.monotonic() + within_s
    while _running(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _group_members_running(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``, from the pid list."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (FileNotFoundError, ProcessLookupError):
                continue
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                members.append(int(entry.name))
    return members


def test_a_prompt_with_metacharacters_and_100_kb_arrives_byte_for_byte(tmp_path: Path) -> None:
    """Quotes, $(), backticks, ; | & > and 100 KB reach the agent's stdin unchanged."""
    prompt = ("echo \"$(rm -rf /)\" `id` ; | & > 'single' \\ \n\t ünïcødé " * 2000).encode()
    assert len(prompt) > 100_000
    agent = _script(
        tmp_path,
        "agent.py",
        """
        import sys
        data = sys.stdin.buffer.read()
        open("received.bin", "wb").write(data)
        print("read", len(data))
        """,
    )
    result = run_process(_spec(tmp_path, sys.executable, str(agent), stdin=prompt))
    assert result.exit_code == 0
    assert (tmp_path / "received.bin").read_bytes() == prompt
    output = (tmp_path / "output.log").read_bytes()
    assert output == f"read {len(prompt)}\n".encode()
    assert result.output_digest == hashlib.sha256(output).hexdigest()
    assert result.output_bytes == len(output)


def test_the_exit_status_is_reported(tmp_path: Path) -> None:
    """A non-zero exit is reported as it is, with stderr in the output."""
    agent = _script(
        tmp_path, "fail.py", "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n"
    )
    result = run_process(_spec(tmp_path, sys.executable, str(agent)))
    assert result.exit_code == 3
    assert result.timed_out is None
    assert b"boom" in (tmp_path / "output.log").read_bytes()


def test_a_program_that_does_not_exist_is_reported_as_not_found(tmp_path: Path) -> None:
    """No such program: not_found, no exception, nothing started."""
    result = run_process(_spec(tmp_path, "no-such-agent-program-xyz", "--help"))
    assert result.not_found
    assert result.exit_code is None
    assert result.start_error is not None


def test_a_command_whose_folder_is_gone_is_not_found_and_leaves_no_pipe_open(
    tmp_path: Path,
) -> None:
    """A command that cannot even be started (its working folder is missing) is reported
    not found, with the error, and every pipe opened to start it is closed again."""
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(3):
        result = run_process(_spec(tmp_path, "true", cwd=tmp_path / "gone"))
        assert result.not_found
        assert result.exit_code is None
        assert "gone" in (result.start_error or "")
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.slow
def test_a_silent_agent_is_stopped_with_its_children(tmp_path: Path) -> None:
    """An agent that hangs (with a child that hangs too) is killed as a group on inactivity."""
    agent = _script(
        tmp_path,
        "hang.py",
        """
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("pids", "w").write(f"{os.getpid()} {child.pid}")
        print("working", flush=True)
        time.sleep(600)
        """,
    )
    started = time.monotonic()
    result = run_process(
        _spec(tmp_path, sys.executable, str(agent), inactivity_timeout_s=1.0, grace_s=0.5)
    )
    assert result.timed_out is TimeoutKind.INACTIVITY
    assert time.monotonic() - started < 60  # a bound on a hang: the agent sleeps 600 s
    leader, child = (int(p) for p in (tmp_path / "pids").read_text().split())
    assert _dies_soon(child)
    assert _group_members_running(leader) == []


@pytest.mark.slow
def test_a_chatty_agent_is_stopped_by_the_total_timeout(tmp_path: Path) -> None:
    """Output keeps it from going quiet, but the total timeout still ends it."""
    agent = _script(
        tmp_path,
        "chatty.py",
        """
        import time
        while True:
            print("still going", flush=True)
            time.sleep(0.05)
        """,
    )
    result = run_process(
        _spec(
            tmp_path,
            sys.executable,
            str(agent),
            total_timeout_s=1.0,
            inactivity_timeout_s=30.0,
            grace_s=0.5,
        )
    )
    assert result.timed_out is TimeoutKind.TOTAL
    assert result.output_bytes > 0


@pytest.mark.slow
def test_a_child_left_behind_after_a_normal_exit_is_not_left_running(tmp_path: Path) -> None:
    """The agent exits 0 but leaves a background child holding its output: it is killed."""
    agent = _script(
        tmp_path,
        "leaves.py",
        """
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open("child", "w").write(str(child.pid))
        print("done")
        """,
    )
    started = time.monotonic()
    result = run_process(_spec(tmp_path, sys.executable, str(agent), inactivity_timeout_s=120.0))
    assert result.exit_code == 0
    # Waiting for the orphan's pipe would last until the 120 s inactivity timeout; half of it
    # is "at once" on any machine, however loaded.
    assert result.timed_out is None
    assert time.monotonic() - started < 60, "waited for the orphan's pipe instead of the agent"
    child = int((tmp_path / "child").read_text())
    assert _dies_soon(child)


def test_an_agent_that_removes_its_log_folder_at_once_is_still_read_to_the_end(
    tmp_path: Path,
) -> None:
    """The agent's first act removes the folder of its output file (as ``git clean -fdx``
    does to ``.ralph/``): the output file was opened before the agent started, so the run
    reads it all and reports the exit (before: a race, lost now and then, in which ralph's
    open of the log failed and the run stopped with a traceback's message)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    result = run_process(
        _spec(
            tmp_path,
            "/bin/sh",
            "-c",
            f"rm -rf {logs}; echo after",
            output_path=logs / "agent.log",
        )
    )
    assert result.exit_code == 0
    assert result.start_error is None
    assert result.output_bytes == len(b"after\n")
    assert not logs.exists()
