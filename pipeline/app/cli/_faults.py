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
from collections.abc import Callable, Mapping

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.state import PipelineState
from pipeline.events import WIRE_TAGS, PipelineEvent

__all__ = ["FAULT_ENV", "Fault", "FaultError", "fault_from", "with_fault"]

FAULT_ENV = "RALPH_FAULT_INJECT"
"""The environment variable naming the fault to inject."""

OnEvent = Callable[[PipelineState, PipelineEvent], None]


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


def with_fault(fault: Fault | None, on_event: OnEvent | None) -> OnEvent | None:
    """``on_event`` that also fires ``fault`` (``on_event`` itself without one)."""
    if fault is None:
        return on_event
    seen = 0

    def fire() -> None:
        os.kill(os.getpid(), fault.signum)

    def observed(state: PipelineState, event: PipelineEvent) -> None:
        nonlocal seen
        if on_event is not None:
            on_event(state, event)
        if WIRE_TAGS[type(event)] != fault.tag:
            return
        seen += 1
        if seen != fault.k:
            return
        if fault.delay_s == 0:
            fire()
        else:
            timer = threading.Timer(fault.delay_s, fire)
            timer.daemon = True
            timer.start()

    return observed
