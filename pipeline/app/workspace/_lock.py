"""One run at a time in a workspace: an advisory lock on ``.ralph/run.lock`` (I/O).

Two runs in one work tree kill each other's agents (each cleans up the process group it finds
recorded) and share ``.agent/out``. A run therefore holds an exclusive ``flock`` on the lock
file for its whole life. The kernel drops the lock when the process ends however it ends, so a
run killed with SIGKILL leaves nothing stuck; the file's content (the holder's pid and run id)
is only there to name the run in progress in the refusal. The descriptor is not inherited by
agents (Python opens files close-on-exec), so an agent that outlives ralph holds no lock.

ralph's other turns (the worktree makers' and the integrators' in the git folder, a worker's
on a ticket and on its bare cache) take :func:`flocked`, which opens its file the same way:
never through a link.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import final

import orjson

from pipeline import PipelineError

__all__ = [
    "WorkspaceBusyError",
    "WorkspaceLock",
    "ensure_idle",
    "flocked",
    "hold_workspace",
    "lock_mode",
    "lock_record",
    "read_lock",
]

LOCK_NAME = "run.lock"
"""The lock file's name under ``.ralph/``."""


class WorkspaceBusyError(PipelineError, RuntimeError):
    """Another run holds the workspace; the message names it (run id and pid)."""


@final
class WorkspaceLock:
    """The held lock of one workspace; :meth:`name_run` records the run id once it is known."""

    def __init__(self, fd: int) -> None:
        """Wrap ``fd``, an open descriptor of the lock file this process holds locked."""
        self._fd = fd

    def name_run(self, run_id: str | None) -> None:
        """Write this process's pid and ``run_id`` into the lock file (for the refusal)."""
        record = orjson.dumps({"pid": os.getpid(), "run_id": run_id})
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, record + b"\n", 0)


def lock_record(fd: int) -> dict[str, object]:
    """What the lock file open as ``fd`` says of its holder (``pid``, ``run_id``), as well as
    it can be read (empty: nothing readable)."""
    try:
        raw = os.pread(fd, 4096, 0)
        record = orjson.loads(raw) if raw.strip() else {}
    except (OSError, orjson.JSONDecodeError):
        return {}
    return record if isinstance(record, dict) else {}


def read_lock(ralph_dir: Path) -> dict[str, object]:
    """What the lock file in ``ralph_dir`` says of its holder (:func:`lock_record`), opened
    without following a link; ``OSError`` when it cannot be opened."""
    fd = os.open(ralph_dir / LOCK_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        return lock_record(fd)
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """The run named in the lock file (``run RUN (pid N)``), as well as it can be read."""
    record = lock_record(fd)
    run_id, pid = record.get("run_id"), record.get("pid")
    run = f"run {run_id}" if isinstance(run_id, str) else "a run (its id not yet known)"
    return f"{run} (pid {pid})" if isinstance(pid, int) else run


@contextlib.contextmanager
def hold_workspace(
    ralph_dir: Path, run_id: str | None = None, *, shared: bool = False
) -> Iterator[WorkspaceLock]:
    """Hold the workspace whose metadata folder is ``ralph_dir`` for the ``with`` block.

    ``shared``: the queue's workers, whose leases already decide which of them drives a run
    (a worker frozen past its lease still holds its lock while another takes the run over);
    they exclude ``ralph run`` / ``resume`` / ``demo`` (exclusive) and are excluded by them.
    Raises :class:`WorkspaceBusyError` at once (never waits) when the lock is not free.
    """
    ralph_dir.mkdir(parents=True, exist_ok=True)
    path = ralph_dir / LOCK_NAME
    # O_NOFOLLOW: the lock file is ours; a symlink planted there is not followed.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkspaceBusyError(
                f"{ralph_dir.parent} is busy: {_holder(fd)} is in progress there; "
                "wait for it to end, or stop it (Ctrl-C in its terminal, or ralph interrupt -C "
                f"{ralph_dir.parent}) before starting another"
            ) from None
        lock = WorkspaceLock(fd)
        lock.name_run(run_id)
        yield lock
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def ensure_idle(ralph_dir: Path) -> None:
    """Raise :class:`WorkspaceBusyError` when a run holds the workspace now: a new run asks
    before it judges the work tree, whose changes are then the other run's, not the person's."""
    with hold_workspace(ralph_dir):
        pass


@contextlib.contextmanager
def flocked(path: Path, *, wait: bool = True) -> Iterator[None]:
    """An exclusive ``flock`` on the file at ``path`` (made when missing) for the ``with``
    block; the kernel drops it with its holder, however it dies. Without ``wait``, raises
    ``BlockingIOError`` when another holds it.

    The file is opened without following a link: a symlink planted at ``path`` (where an
    agent may reach) is refused with ``OSError``, never opened or created through."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def lock_mode(ralph_dir: Path) -> str | None:
    """How the workspace's lock is held now: ``exclusive`` (a run), ``shared`` (queue
    workers) or None (by nobody, or no lock file yet), read from ``/proc/locks``. Looking
    takes no lock, so no run starting at the same moment finds its workspace busy. Raises
    ``OSError`` when it cannot tell."""
    try:
        found = (ralph_dir / LOCK_NAME).stat()
    except FileNotFoundError:
        return None
    key = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        # "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END"; "->" marks a waiter.
        if "FLOCK" in fields and key in fields and "->" not in fields:
            return "exclusive" if "WRITE" in fields else "shared"
    return None
