"""Running one agent process: argv only, its own process group, timeouts, no orphans (I/O).

The process gets the prompt on stdin (or not at all), its output (stdout and stderr merged) is
streamed to a file and digested as it arrives, and it is stopped when it has been silent for
the inactivity timeout or has run for the total timeout: SIGTERM to its whole process group,
a grace period, then SIGKILL. The result says what happened; deciding what that means for the
run is the reducer's job.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, final

from attrs import frozen

from pipeline.events import TimeoutKind
from pipeline.handlers.agents._groups import (
    forget_group,
    group_members,
    record_group,
    stop_recorded_group,
)

__all__ = ["ProcessResult", "ProcessSpec", "run_process"]

_CHUNK = 65_536


@final
@frozen
class ProcessSpec:
    """What to run and how long to let it run."""

    argv: tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    output_path: Path
    stdin: bytes | None = None
    total_timeout_s: float = 3_600.0
    inactivity_timeout_s: float = 600.0
    grace_s: float = 5.0
    group_file: Path | None = None
    """Where the running group is recorded (one per workspace): a group left there by a
    driver that was killed is stopped before this one starts."""
    spare_leader: bool = False
    """Stop the group by sending SIGTERM to every member but its leader (a sandbox's bwrap,
    which would end the whole namespace at once and take the agent's grace period with it);
    the leader exits when they do, and SIGKILL still reaches the whole group after the
    grace period."""
    pass_fds: tuple[int, ...] = ()
    """File descriptors the process inherits (the sandbox's account files)."""


@final
@frozen
class ProcessResult:
    """What happened to the process."""

    exit_code: int | None
    """The exit status (negative: killed by that signal); None when it never started."""
    duration_ms: int
    timed_out: TimeoutKind | None
    not_found: bool
    """The program does not exist or cannot be executed."""
    start_error: str | None
    output_digest: str
    output_bytes: int


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the prompt and close stdin; a child that exits without reading is not an error."""
    with contextlib.suppress(BrokenPipeError, ValueError, OSError):
        stream.write(data)
        stream.close()


def _kill_group(pgid: int, signum: int) -> None:
    # The group may be gone already (everything exited): that is the outcome we want.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _stop_group(process: subprocess.Popen[bytes], grace_s: float, spare_leader: bool) -> None:
    """SIGTERM the whole process group (or all of it but the leader), wait ``grace_s``, then
    SIGKILL what is left."""
    if spare_leader:
        for pid in group_members(process.pid):
            if pid != process.pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
    else:
        _kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    # Children may outlive the leader: the group is killed whatever the leader did.
    _kill_group(process.pid, signal.SIGKILL)
    process.wait()


def run_process(spec: ProcessSpec) -> ProcessResult:
    """Run ``spec`` to completion or timeout; never leaves a process of its group behind."""
    digest = hashlib.sha256()
    if spec.group_file is not None:
        stop_recorded_group(spec.group_file, spec.grace_s)
    try:
        # Opened before the agent starts: an agent that removes the folder (``git clean
        # -fdx``) cannot take the file from under the run, which keeps writing to it.
        output = spec.output_path.open("wb")
    except OSError as error:
        return ProcessResult(None, 0, None, False, str(error), digest.hexdigest(), 0)
    with output:
        return _start(spec, output, digest)


def _start(spec: ProcessSpec, output: IO[bytes], digest: Any) -> ProcessResult:
    """Start ``spec``'s process, its output going to ``output``, and see it to its end."""
    started = time.monotonic()
    try:
        process = subprocess.Popen(
            list(spec.argv),
            cwd=spec.cwd,
            env=dict(spec.env),
            stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=spec.pass_fds,
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as error:
        return ProcessResult(None, 0, None, True, str(error), digest.hexdigest(), 0)
    except OSError as error:
        return ProcessResult(None, 0, None, False, str(error), digest.hexdigest(), 0)
    if spec.group_file is not None:
        record_group(spec.group_file, process.pid)
    try:
        return _supervise(process, spec, output, digest, started)
    finally:
        if spec.group_file is not None:
            forget_group(spec.group_file)


def _supervise(
    process: subprocess.Popen[bytes],
    spec: ProcessSpec,
    output: IO[bytes],
    digest: Any,
    started: float,
) -> ProcessResult:
    """Feed, read and time the process until its whole group is gone."""
    feeder = None
    if spec.stdin is not None and process.stdin is not None:
        # A thread, so that a prompt larger than the pipe cannot deadlock against our reads.
        feeder = threading.Thread(target=_feed, args=(process.stdin, spec.stdin), daemon=True)
        feeder.start()
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        timed_out, size = _pump(process, spec, output, selector, digest, started)
    except BaseException:
        # Interrupted (a signal, an error): the agent's whole group goes before we do.
        selector.close()
        _stop_group(process, spec.grace_s, spec.spare_leader)
        process.stdout.close()
        raise
    selector.close()
    if timed_out is not None:
        _stop_group(process, spec.grace_s, spec.spare_leader)
    else:
        process.wait()
        # The leader is gone; anything it left in its group goes with it.
        _kill_group(process.pid, signal.SIGKILL)
    process.stdout.close()
    if feeder is not None:
        feeder.join(timeout=1)
    duration_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(
        process.returncode, duration_ms, timed_out, False, None, digest.hexdigest(), size
    )


def _pump(
    process: subprocess.Popen[bytes],
    spec: ProcessSpec,
    output: IO[bytes],
    selector: selectors.BaseSelector,
    digest: Any,
    started: float,
) -> tuple[TimeoutKind | None, int]:
    """Copy the output to the file until the process ends or a timeout fires."""
    assert process.stdout is not None
    timed_out: TimeoutKind | None = None
    size = 0
    last_output = started
    while True:
        now = time.monotonic()
        total_left = spec.total_timeout_s - (now - started)
        quiet_left = spec.inactivity_timeout_s - (now - last_output)
        if total_left <= 0:
            timed_out = TimeoutKind.TOTAL
            break
        if quiet_left <= 0:
            timed_out = TimeoutKind.INACTIVITY
            break
        if not selector.select(timeout=min(total_left, quiet_left, 0.2)):
            if process.poll() is not None:
                # The leader exited; a child it left behind may hold the pipe open.
                break
            continue
        chunk = os.read(process.stdout.fileno(), _CHUNK)
        if not chunk:
            break
        output.write(chunk)
        digest.update(chunk)
        size += len(chunk)
        last_output = time.monotonic()
    return timed_out, size
