"""The record of the agent process group at work in a workspace, so that a run resumed after
its driver was killed (``kill -9`` of ``ralph run`` or of a worker) stops the agent that
driver left behind before it starts another (I/O).

An agent leads its own process group, so that a timeout can stop all of it; the price is that
it outlives a driver killed without warning. The record names the host, the boot, the group
and its leader's start time: a group is stopped only when all of them still match, so a
recycled process id is never mistaken for the agent.

The record lies in the workspace, where an agent can put anything in its place: a directory,
a link, a FIFO. Whatever is there that is not a regular file is never read, written through
or removed; the record is then simply not kept (it is a safety net, not a condition of
running), so no run or resume is stopped by it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import stat
import time
from pathlib import Path

import orjson

__all__ = ["forget_group", "group_members", "kill_group", "record_group", "stop_recorded_group"]

_REAPER_BOUND_S = 5.0
"""How long a reaper told to end everything may take before its group is killed."""


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int | str) -> list[str]:
    """The fields of the process's ``/proc`` status line after its command name (state,
    parent, group, ...); none when it is gone, or there is no ``/proc``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # The command name may hold spaces and parentheses: the fields follow the last ')'.
    return stat.rsplit(")", 1)[1].split()


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None: gone, or no /proc)."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def group_members(pgid: int) -> tuple[int, ...]:
    """The processes of group ``pgid`` this process can see, read from ``/proc`` (empty
    without it)."""
    members = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            fields = _stat(entry.name) if entry.name.isdigit() else []
            if fields and int(fields[2]) == pgid:  # none: gone since the listing
                members.append(int(entry.name))
    return tuple(members)


def kill_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to group ``pgid``, if it is still there to be sent one."""
    # The group may be gone already (everything exited): that is the outcome we want.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def record_group(path: Path, pgid: int) -> None:
    """Note that the group ``pgid`` (its leader just started) is the agent at work."""
    record = {
        "host": socket.gethostname(),
        "boot": _boot_id(),
        "pgid": pgid,
        "started": _start_time(pgid),
    }
    temporary = path.with_name(path.name + ".tmp")
    # A safety net, not a condition of running: an unwritable record costs only the clean-up.
    with contextlib.suppress(OSError):
        if not _replaceable(path) or not _replaceable(temporary):
            return
        temporary.unlink(missing_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with os.fdopen(os.open(temporary, flags, 0o644), "wb") as handle:
                handle.write(orjson.dumps(record))
            temporary.replace(path)
        except OSError:
            # A full disk: no half-written record left behind.
            temporary.unlink(missing_ok=True)
            raise


def _replaceable(path: Path) -> bool:
    """Whether ``path`` is missing, a regular file or a link (removing a link touches nothing
    it points to); a directory or another kind of file is not ralph's to remove."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return True
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def forget_group(path: Path) -> None:
    """The recorded group has been stopped and reaped."""
    with contextlib.suppress(OSError):
        if _replaceable(path):
            path.unlink(missing_ok=True)


def _read_record(path: Path) -> bytes:
    """The record's bytes: a regular file only, reached through no link, read without
    waiting (``OSError`` otherwise)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    with os.fdopen(os.open(path, flags), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return handle.read(4096)


def stop_recorded_group(path: Path, grace_s: float) -> int | None:
    """Stop the group recorded at ``path`` if it is still this host's and alive (SIGTERM, a
    grace period, SIGUSR1 to its reaper, SIGKILL); forget the record. Returns the group
    stopped, or None."""
    try:
        record = orjson.loads(_read_record(path))
        host, boot, pgid = record["host"], record["boot"], int(record["pgid"])
        started = record["started"]
    except (OSError, ValueError, KeyError, TypeError):
        forget_group(path)  # unreadable: nothing trustworthy to act on
        return None
    forget_group(path)
    if host != socket.gethostname() or boot != _boot_id() or not _group_alive(pgid):
        return None
    leader = _start_time(pgid)
    # The leader alive with another start time: the id was recycled, not ours. The leader
    # gone while the group lives: its id cannot have been reused, so the group is ours.
    if leader is not None and leader != started:
        return None
    kill_group(pgid, signal.SIGTERM)
    _wait_for_group(pgid, grace_s)
    if leader is not None and _group_alive(pgid):
        # The leader is the command's reaper (``_reaper.py``): told so, it kills what left
        # the group too, which SIGKILL to the group would leave running.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pgid, signal.SIGUSR1)
        _wait_for_group(pgid, _REAPER_BOUND_S)
    kill_group(pgid, signal.SIGKILL)
    return pgid


def _wait_for_group(pgid: int, within_s: float) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.02)
