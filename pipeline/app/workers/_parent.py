"""A worker started by ``ralph worker --concurrency N`` stops when that parent dies (I/O).

Killed with kill -9, the parent cannot pass anything on; so each child asks Linux to send it
SIGTERM when its parent dies (``prctl(PR_SET_PDEATHSIG)``), and, where that is not available
or the parent died before the request, a thread watches the parent's pid. Either way the
child gets the SIGTERM an operator would send: its run is interrupted cleanly and its ticket
given back to the queue.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

__all__ = ["PARENT_ENV", "exit_with_parent"]

PARENT_ENV = "RALPH_WORKER_PARENT"
"""Set by the parent to its pid in each child's environment."""

_PR_SET_PDEATHSIG = 1
_WATCH_S = 0.5


def exit_with_parent(parent: int) -> None:
    """SIGTERM this process when ``parent`` (the pid that started it) is gone."""
    if sys.platform == "linux":
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):
            pass  # the watcher alone
    watcher = threading.Thread(target=_watch, args=(parent,), name="parent-watch", daemon=True)
    watcher.start()


def _watch(parent: int) -> None:
    """Poll the parent pid: an orphan is adopted by another process (init or a subreaper)."""
    while os.getppid() == parent:
        time.sleep(_WATCH_S)
    os.kill(os.getpid(), signal.SIGTERM)
