"""Interrupting a durable run from outside (SIGINT, SIGTERM, an embedding application).

A request is honoured at a safe point: at once while a handler is working (the handler is
abandoned; an agent's process group is stopped on the way out), otherwise before the next
effect. Never while facts are being appended or folded, so the log and the state stay in step.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

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
    def armed(self) -> Iterator[None]:
        """Within this block a request raises :class:`Interrupted` at once."""
        if self.reason is not None:
            raise Interrupted(self.reason)
        self._armed = True
        try:
            yield
        finally:
            self._armed = False
