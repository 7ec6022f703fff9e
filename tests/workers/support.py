"""Workspaces and worker processes for the queue's tests."""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from tests.runtime.workspace import ITERATE, RALPH, SHELL_REPORTS, make_workspace, scripted

SHELL_ITERATE = (
    SHELL_REPORTS.replace("completed\\ndone", "partial\\nmore to do")
    .replace("'Do it'", "'Do a part'")
    .replace('echo "$$" >> work.txt\n', "")
)
""":data:`ITERATE` as a shell agent's lines: the same reports, without a Python interpreter's
start per invocation (a fleet of runs spends most of its time starting agents)."""


def queue_workspace(
    root: Path,
    *,
    iterations: int = 1,
    delay_s: float = 0.0,
    shell: bool = False,
    agent: list[str] | None = None,
) -> Path:
    """A workspace whose scripted agent follows :data:`ITERATE` for ``iterations``
    iterations, pausing ``delay_s`` in each invocation (``shell``: a shell agent doing the
    same, :data:`SHELL_ITERATE`, with no pause; ``agent``: that agent's argv instead)."""
    script = ITERATE + (f"delay_s = {delay_s}\n" if delay_s else "")
    if agent is None:
        agent = ["sh", "-c", SHELL_ITERATE] if shell else scripted("iterate.toml")
    return make_workspace(
        root,
        scripts={"iterate.toml": script},
        agents={"main": agent},
        budgets=f"max_iterations = {iterations}\nmax_review_passes = 1\nmax_retries_per_agent = 1",
    )


def start_worker(
    url: str,
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    new_session: bool = False,
) -> subprocess.Popen[str]:
    """``ralph worker --store URL ARGS`` in its own process (its lines on stderr), in ``env``
    (default: this process's); with ``new_session``, in a process group of its own, so that
    a signal to the group reaches its agents too."""
    return subprocess.Popen(
        [*RALPH, "worker", "--store", url, *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**(os.environ if env is None else env), "TERM": "dumb"},
        start_new_session=new_session,
    )


def drain(url: str, concurrency: int, cwd: Path, timeout: float = 400) -> str:
    """One ``ralph worker`` running ``concurrency`` pipelines at once until the queue is
    empty; returns its lines (stderr), once it exited 0."""
    worker = start_worker(
        url,
        "--concurrency",
        str(concurrency),
        "--exit-when-idle",
        "--poll-seconds",
        "0.05",
        cwd=cwd,
    )
    _out, err = worker.communicate(timeout=timeout)
    assert worker.returncode == 0, err[-3000:]
    return err


def read_until(worker: subprocess.Popen[str], needle: str, within_s: float = 60) -> str:
    """What ``worker`` wrote on stderr up to and including the first chunk that makes it
    say ``needle``: waits for the saying itself, not for a time it should take (failing
    once ``within_s`` pass, or as soon as the worker ends without saying it). The rest is
    left to ``communicate``."""
    assert worker.stderr is not None
    fd = worker.stderr.fileno()
    said = b""
    deadline = time.monotonic() + within_s
    while needle.encode() not in said:
        left = deadline - time.monotonic()
        assert left > 0, f"the worker never said {needle!r}: {said.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 65536)
            assert chunk, f"the worker ended without saying {needle!r}: {said.decode()}"
            said += chunk
    return said.decode(errors="replace")
