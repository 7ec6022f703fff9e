"""SIGINT and SIGTERM for the whole ``ralph`` process, so that a run's exit code survives
signals that come while it shuts down or after it ended (I/O).

While a run is driven, :func:`pipeline.app.workspace.drive` turns these signals into an
interruption request. Before and after that, the handlers installed here answer: before any
run, a signal does what it does by default (SIGINT raises ``KeyboardInterrupt``, SIGTERM ends
the process); once a run was handed its interruption, a signal only becomes a request to that
interruption, which the run has either still to honour or has already finished with, and the
process exits with the run's own code (130 when interrupted, 0 when complete) instead of being
killed by the signal.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from types import FrameType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the engine is imported by the command that drives a run, not by every one
    from pipeline.engine import Interruption

__all__ = ["routed_signals", "run_interruption"]

_current: list[Interruption] = []
"""The interruption of the run this process drives (at most one), once it was handed out."""


def run_interruption() -> Interruption:
    """The interruption to drive this process's run with; from now on signals go to it."""
    if not _current:
        from pipeline.engine import Interruption

        _current.append(Interruption())
    return _current[0]


def _handle(signum: int, _frame: FrameType | None) -> None:
    if not _current:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    # A request after the run ended (or while it records its interruption) changes nothing.
    _current[0].request(signal.Signals(signum).name)


_ROUTED = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def routed_signals() -> Iterator[None]:
    """Route SIGINT and SIGTERM through this module for the rest of the process (the
    ``ralph`` entry point only: a library embedding the CLI keeps its own handlers).

    On the way out of a command that drove a run the two signals are blocked: the
    interpreter puts the default handlers back while it shuts down, and a signal then would
    end the process with -15 instead of the run's code. A blocked signal dies with it.
    """
    for signum in _ROUTED:
        signal.signal(signum, _handle)
    try:
        yield
    finally:
        if _current:
            signal.pthread_sigmask(signal.SIG_BLOCK, _ROUTED)
