"""Running one command (an agent, a gate, a hook): argv only, its own process group,
timeouts, no orphans (I/O).

The process gets the prompt on stdin (or not at all), its output (stdout and stderr merged) is
streamed to a file and digested as it arrives, and it is stopped when it has been silent for
the inactivity timeout or has run for the total timeout: SIGTERM to its whole process group,
a grace period, then SIGKILL. The result says what happened; deciding what that means for the
run is the reducer's job.

A command's end is its leader's exit, and its status is the leader's. On Linux the command
runs behind its own reaper (``_reaper.py``, whose text says why a process per command), which
ends everything the command started when the leader exits, also what left its group with
``setsid`` or a double fork; so a child that keeps printing neither holds the command to its
timeout nor outlives it. Elsewhere the command runs directly and its group is what is ended.
"""

from __future__ import annotations

import contextlib
import errno
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

from attrs import define, frozen

from pipeline.events import TimeoutKind
from pipeline.handlers.agents._groups import (
    forget_group,
    group_members,
    kill_group,
    record_group,
    stop_recorded_group,
)
from pipeline.handlers.agents._reaper import reaper_argv, reaper_usable

__all__ = ["ProcessResult", "ProcessSpec", "not_started", "run_process"]

_CHUNK = 65_536
_DRAIN_S = 1.0
"""How long output is still read after the process ended (what it had already written)."""
_REAPER_BOUND_S = 15.0
"""How long a reaper told to end everything now may take before its group is killed."""


@final
@frozen(kw_only=True)
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
@frozen(kw_only=True)
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


def not_started(why: str, *, not_found: bool = False, digest: str = "") -> ProcessResult:
    """The result of a command that never started: ``why`` it did not (``not_found``: the
    program does not exist or cannot be executed), no exit, no time, no output."""
    return ProcessResult(
        exit_code=None,
        duration_ms=0,
        timed_out=None,
        not_found=not_found,
        start_error=why,
        output_digest=digest,
        output_bytes=0,
    )


def _feed(stream: IO[bytes], data: bytes) -> None:
    """Write the prompt and close stdin; a child that exits without reading is not an error."""
    with contextlib.suppress(BrokenPipeError, ValueError, OSError):
        stream.write(data)
        stream.close()


@define(kw_only=True)
class _Child:
    """A started command: the process ralph started (its reaper, or the command itself where
    there is none), the command's own pid, and the reaper's status pipe."""

    process: subprocess.Popen[bytes]
    leader: int
    status: int | None = None

    def exit_code(self) -> int | None:
        """The command's exit status, once the process ralph started has been waited for:
        the reaper's report, or (no reaper, or a reaper killed before its report) the
        status of the process itself."""
        said = _read_all(self.status) if self.status is not None else b""
        for line in said.decode(errors="replace").splitlines():
            word, _, value = line.partition(" ")
            if word == "ended" and value.lstrip("-").isdigit():
                return int(value)
        return self.process.returncode

    def close(self) -> None:
        """Let the status pipe go."""
        if self.status is not None:
            with contextlib.suppress(OSError):
                os.close(self.status)
            self.status = None


def _read_all(fd: int) -> bytes:
    """What is left in the pipe ``fd`` (its writer has exited, so this ends)."""
    chunks = []
    with contextlib.suppress(OSError):
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    return b"".join(chunks)


def _read_line(fd: int) -> str:
    """The first line the reaper says (empty: it exited without a word)."""
    said = b""
    while not said.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            break
        said += chunk
    return said.decode(errors="replace").strip()


def _stop_group(child: _Child, grace_s: float, spare_leader: bool) -> None:
    """SIGTERM the whole process group (or all of it but the reaper and the leader), wait
    ``grace_s``, then have the reaper kill everything below it, and SIGKILL what is left of
    the group."""
    process = child.process
    if spare_leader:
        for pid in group_members(process.pid):
            if pid not in (process.pid, child.leader):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGTERM)
    else:
        kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace_s)
    if child.status is not None and process.poll() is None:
        # The reaper kills the leader and whatever escaped the group, then reports.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(process.pid, signal.SIGUSR1)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=_REAPER_BOUND_S)
    # Children may outlive the leader: the group is killed whatever the leader did.
    kill_group(process.pid, signal.SIGKILL)
    process.wait()


def run_process(spec: ProcessSpec) -> ProcessResult:
    """Run ``spec`` to completion or timeout; never leaves a process it started behind."""
    digest = hashlib.sha256()
    if spec.group_file is not None:
        stop_recorded_group(spec.group_file, spec.grace_s)
    try:
        # Opened before the agent starts: an agent that removes the folder (``git clean
        # -fdx``) cannot take the file from under the run, which keeps writing to it.
        output = spec.output_path.open("wb")
    except OSError as error:
        return not_started(str(error), digest=digest.hexdigest())
    with output:
        return _start(spec, output, digest)


def _popen(
    spec: ProcessSpec, argv: list[str], pass_fds: tuple[int, ...]
) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        argv,
        cwd=spec.cwd,
        env=dict(spec.env),
        stdin=subprocess.PIPE if spec.stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    if spec.group_file is not None:
        record_group(spec.group_file, process.pid)
    return process


def _launch(spec: ProcessSpec) -> _Child | ProcessResult:
    """Start ``spec``'s command (behind its reaper where there is one; its group recorded at
    once), or say why not."""
    digest = hashlib.sha256().hexdigest()
    read, write = os.pipe() if reaper_usable() else (None, None)
    argv, fds = list(spec.argv), spec.pass_fds
    if write is not None:
        argv, fds = reaper_argv(write, spec.env, spec.argv), (*fds, write)
    try:
        process = _popen(spec, argv, fds)
    except OSError as error:
        if read is not None:
            os.close(read)
        missing = isinstance(error, FileNotFoundError | PermissionError | NotADirectoryError)
        return not_started(str(error), not_found=missing, digest=digest)
    finally:
        if write is not None:
            os.close(write)
    child = _Child(process=process, leader=process.pid, status=read)
    if read is None:
        return child
    try:
        first = _read_line(read)
    except BaseException:
        _stop_group(child, spec.grace_s, spec.spare_leader)
        child.close()
        raise
    word, _, value = first.partition(" ")
    if word == "started" and value.isdigit():
        child.leader = int(value)
        return child
    process.wait()
    child.close()
    if word == "failed" and value.isdigit():
        number = int(value)
        why = f"[Errno {number}] {os.strerror(number)}: {spec.argv[0]!r}"
        missing = number in (errno.ENOENT, errno.EACCES, errno.ENOTDIR)
        return not_started(why, not_found=missing, digest=digest)
    why = f"the process runner could not start {spec.argv[0]!r} (exit {process.returncode})"
    return not_started(why, digest=digest)


def _start(spec: ProcessSpec, output: IO[bytes], digest: Any) -> ProcessResult:
    """Start ``spec``'s process, its output going to ``output``, and see it to its end."""
    started = time.monotonic()
    try:
        child = _launch(spec)
        if isinstance(child, ProcessResult):
            return child
        try:
            return _supervise(child, spec, output, digest, started)
        finally:
            child.close()
    finally:
        if spec.group_file is not None:
            forget_group(spec.group_file)


def _supervise(
    child: _Child,
    spec: ProcessSpec,
    output: IO[bytes],
    digest: Any,
    started: float,
) -> ProcessResult:
    """Feed, read and time the process until it has ended and what it left is gone."""
    process = child.process
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
        _stop_group(child, spec.grace_s, spec.spare_leader)
        process.stdout.close()
        raise
    selector.close()
    if timed_out is not None:
        _stop_group(child, spec.grace_s, spec.spare_leader)
    else:
        process.wait()
        # The leader is gone; anything it left in its group goes with it (its reaper has
        # already ended everything below it, inside the group or not).
        kill_group(process.pid, signal.SIGKILL)
    process.stdout.close()
    if feeder is not None:
        feeder.join(timeout=1)
    duration_ms = int((time.monotonic() - started) * 1000)
    return ProcessResult(
        exit_code=child.exit_code(),
        duration_ms=duration_ms,
        timed_out=timed_out,
        not_found=False,
        start_error=None,
        output_digest=digest.hexdigest(),
        output_bytes=size,
    )


def _pump(
    process: subprocess.Popen[bytes],
    spec: ProcessSpec,
    output: IO[bytes],
    selector: selectors.BaseSelector,
    digest: Any,
    started: float,
) -> tuple[TimeoutKind | None, int]:
    """Copy the output to the file until the process ends or a timeout fires.

    The process's end ends the reading: a child it left that keeps printing (a dev server's
    log, a ticker) holds the pipe open, so what is already written is read for at most
    ``_DRAIN_S`` more, and the rest is not waited for."""
    assert process.stdout is not None
    timed_out: TimeoutKind | None = None
    size = 0
    last_output = started
    drain_until: float | None = None
    while True:
        now = time.monotonic()
        if drain_until is None and process.poll() is not None:
            drain_until = now + _DRAIN_S
        if drain_until is not None and now >= drain_until:
            break
        total_left = spec.total_timeout_s - (now - started)
        quiet_left = spec.inactivity_timeout_s - (now - last_output)
        if drain_until is None and total_left <= 0:
            timed_out = TimeoutKind.TOTAL
            break
        if drain_until is None and quiet_left <= 0:
            timed_out = TimeoutKind.INACTIVITY
            break
        wait = 0.0 if drain_until is not None else min(total_left, quiet_left, 0.2)
        if not selector.select(timeout=wait):
            if drain_until is not None:
                break  # nothing more is buffered
            continue
        chunk = os.read(process.stdout.fileno(), _CHUNK)
        if not chunk:
            break
        output.write(chunk)
        digest.update(chunk)
        size += len(chunk)
        last_output = time.monotonic()
    return timed_out, size
