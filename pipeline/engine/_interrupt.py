"""Interrupting a durable run from outside (SIGINT, SIGTERM, an embedding application).

A request is honoured at a safe point: at once while a handler is working (the handler is
abandoned; an agent's process group is stopped on the way out), otherwise before the next
effect. Never while facts are being appended or folded, so the log and the state stay in step.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator
from types import FrameType

__all__ = ["Interrupted", "Interruption"]


class Interrupted(BaseException):
    """Raised inside a handler to abandon it; a ``BaseException`` so that no handler's
    ``except Exception`` can swallow it."""


class Interruption:
    """Where an interruption request is recorded and raised at the right moment."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self._armed = False

    def request(self, reason: str) -> None:
        """Ask the run to stop (safe to call from a signal handler)."""
        if self.reason is None:
            self.reason = reason
        if self._armed:
            self._armed = False
            raise Interrupted(reason)

    @contextlib.contextmanager
    def on_signals(self) -> Iterator[None]:
        """Within this block SIGINT and SIGTERM are requests to stop (at a safe point)
        instead of ending the process wherever it is; the handlers before are put back
        after."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            self.request(signal.Signals(signum).name)

        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for signum, old in previous.items():
                signal.signal(signum, old)

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """Within this block a request raises :class:`Interrupted` at once."""
        if self.reason is not None:
            raise Interrupted(self.reason)
        self._armed = True
        try:
            yield
        finally:
            self._armed = False
