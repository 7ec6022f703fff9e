"""The record of the agent process group at work in a workspace, so that a run resumed after
its driver was killed (``kill -9`` of ``ralph run`` or of a worker) stops the agent that
driver left behind before it starts another (I/O).

An agent leads its own process group, so that a timeout can stop all of it; the price is that
it outlives a driver killed without warning. The record names the host, the boot, the group
and its leader's start time: a group is stopped only when all of them still match, so a
recycled process id is never mistaken for the agent.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from pathlib import Path

import orjson

__all__ = ["forget_group", "record_group", "stop_recorded_group"]


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (None: gone, or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields follow the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[19])


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
        temporary.write_bytes(orjson.dumps(record))
        temporary.replace(path)


def forget_group(path: Path) -> None:
    """The recorded group has been stopped and reaped."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def stop_recorded_group(path: Path, grace_s: float) -> int | None:
    """Stop the group recorded at ``path`` if it is still this host's and alive (SIGTERM, a
    grace period, SIGKILL); forget the record. Returns the group stopped, or None."""
    try:
        record = orjson.loads(path.read_bytes())
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
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _group_alive(pgid):
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    return pgid
