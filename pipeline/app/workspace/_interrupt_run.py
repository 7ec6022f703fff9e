"""``ralph interrupt``: stop the run in progress in a workspace from another terminal or from
``ralph serve``, as Ctrl-C in its own terminal would (I/O: reads the workspace's lock, sends a
signal).

The run in progress holds ``.ralph/run.lock`` exclusively and names its pid and run there. The
signal goes to that pid only while the lock is held and the process is ralph's (its command
line runs ``pipeline`` or ``ralph``): a lock file left behind, or one naming another program,
is refused. The run then stops cleanly: its agent is stopped, ``RunInterrupted`` recorded, a
checkpoint saved, and ``ralph resume`` goes on. A workspace that queue workers hold (shared)
is stopped with ``ralph cancel TICKET`` instead.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from pipeline import PipelineError
from pipeline.app.workspace._lock import LOCK_NAME, lock_mode, read_lock
from pipeline.handlers.runtime import WorkspaceLayout

__all__ = ["NotInterruptedError", "interrupt_run"]


class NotInterruptedError(PipelineError, ValueError):
    """No run could be asked to stop (none in progress, another one, not ralph's process)."""


def interrupt_run(root: Path, run_id: str | None = None) -> tuple[str | None, int]:
    """Ask the ralph process running in workspace ``root`` (its run ``run_id``, when given) to
    stop; returns the run (None: its id not yet known) and the pid signalled."""
    ralph_dir = WorkspaceLayout(root=root.resolve()).ralph_dir
    path = ralph_dir / LOCK_NAME
    try:
        mode = lock_mode(ralph_dir)
    except OSError as error:
        raise NotInterruptedError(f"cannot read {path}: {error.strerror}") from None
    if mode is None:
        raise NotInterruptedError(f"no run is in progress in {root}")
    if mode == "shared":
        raise NotInterruptedError(
            f"queue workers run {root}: stop its run with ralph cancel TICKET --store URL"
        )
    try:
        record = read_lock(ralph_dir)
    except OSError as error:
        raise NotInterruptedError(f"cannot read {path}: {error.strerror}") from None
    pid, held = record.get("pid"), record.get("run_id")
    if not isinstance(pid, int) or pid <= 1:
        raise NotInterruptedError(f"{path} names no process to stop")
    if run_id is not None and held != run_id:
        raise NotInterruptedError(
            f"run {run_id} is not in progress in {root}" + (f" ({held} is)" if held else "")
        )
    if not _is_ralph(pid):
        raise NotInterruptedError(f"{path} names pid {pid}, which is not a ralph process")
    os.kill(pid, signal.SIGINT)
    return (held if isinstance(held, str) else None), pid


def _is_ralph(pid: int) -> bool:
    """Whether process ``pid`` runs ralph (``python -m pipeline...``, or the ``ralph`` script)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(b"pipeline" in word or Path(os.fsdecode(word)).name == "ralph" for word in words)
