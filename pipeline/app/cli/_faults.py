"""The fault-injection seam of ``ralph run`` and ``ralph resume`` (for the fault tests).

``RALPH_FAULT_INJECT="<wire tag>:<k>:<SIGNAL>[:<delay s>]"`` sends ``SIGNAL`` (``SIGKILL``,
``SIGINT``, ``SIGTERM``) to the ralph process itself once the ``k``-th fact of that kind (a
tag of ``pipeline.events.WIRE_TAGS``, e.g. ``commit.commit_created``) is stored, at once or
``delay`` seconds later (to land inside the effect that follows: an agent at work, a wait
for a person). Nothing happens without the variable; a malformed value is a usage error.
``tests/faults`` drives it (``python -m tests.faults.sweep`` for the whole sweep).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Mapping

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.state import PipelineState
from pipeline.engine import RunObserver
from pipeline.events import WIRE_TAGS, PipelineEvent

__all__ = ["FAULT_ENV", "Fault", "FaultError", "Faulting", "fault_from", "faulting"]

FAULT_ENV = "RALPH_FAULT_INJECT"
"""The environment variable naming the fault to inject."""


class FaultError(PipelineError, ValueError):
    """The fault variable is malformed; the message says how."""


@frozen(kw_only=True)
class Fault:
    """Send ``signum`` ``delay_s`` after the ``k``-th fact tagged ``tag`` is stored."""

    tag: str
    k: int
    signum: signal.Signals
    delay_s: float = 0.0


def fault_from(environ: Mapping[str, str]) -> Fault | None:
    """The fault ``environ`` asks for, or None."""
    text = environ.get(FAULT_ENV)
    if not text:
        return None
    parts = text.split(":")
    usage = f"{FAULT_ENV}={text!r}: expected <wire tag>:<k>:<SIGNAL>[:<delay s>]"
    if len(parts) not in (3, 4) or parts[0] not in WIRE_TAGS.values():
        raise FaultError(usage)
    try:
        k, signum = int(parts[1]), signal.Signals[parts[2]]
        delay = float(parts[3]) if len(parts) == 4 else 0.0
    except (KeyError, ValueError) as error:
        raise FaultError(usage) from error
    if k < 1 or delay < 0:
        raise FaultError(usage)
    return Fault(tag=parts[0], k=k, signum=signum, delay_s=delay)


class Faulting(RunObserver):
    """An observer that fires ``fault`` once its fact is stored."""

    __slots__ = ("_fault", "_seen")

    def __init__(self, fault: Fault) -> None:
        self._fault = fault
        self._seen = 0

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        """Count the facts of the fault's kind; fire at the ``k``-th."""
        fault = self._fault
        if WIRE_TAGS[type(event)] != fault.tag:
            return
        self._seen += 1
        if self._seen != fault.k:
            return
        if fault.delay_s == 0:
            self._fire()
        else:
            timer = threading.Timer(fault.delay_s, self._fire)
            timer.daemon = True
            timer.start()

    def _fire(self) -> None:
        os.kill(os.getpid(), self._fault.signum)


def faulting(environ: Mapping[str, str]) -> list[RunObserver]:
    """The observer that injects the fault ``environ`` asks for (none without one)."""
    fault = fault_from(environ)
    return [] if fault is None else [Faulting(fault)]
