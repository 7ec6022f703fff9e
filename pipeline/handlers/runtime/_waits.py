"""The run's waits (I/O: the clock and sleeping): a backoff before a retry, and the wait for a
provider limit's reset. Both report how they ended, so that replay never waits."""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from typing import Final

from pipeline.core.effects import BackOff, WaitForLimitReset
from pipeline.events import (
    BackoffWaited,
    BudgetExceeded,
    BudgetKind,
    DurationMs,
    Instant,
    LimitResetAwaited,
)
from pipeline.handlers.runtime._io import Facts

__all__ = ["HAND_BACK_AFTER_S", "back_off", "runtime_spent", "wait_for_reset"]

HAND_BACK_AFTER_S: Final = 60.0
"""A wait for a limit's reset longer than this is handed back by a queue worker, which then
serves other tickets meanwhile, instead of sleeping on its lease."""


def back_off(
    effect: BackOff,
    rng: random.Random,
    sleep: Callable[[float], None],
    clock: Callable[[], Instant],
) -> Facts:
    """Wait a delay picked from 0 to the effect's ceiling (the jitter is in the fact)."""
    delay = rng.randint(0, effect.ceiling_ms)
    sleep(delay / 1000)
    return (BackoffWaited(role=effect.role, delay_ms=DurationMs(delay), at=clock()),)


def wait_for_reset(
    effect: WaitForLimitReset,
    sleep: Callable[[float], None],
    clock: Callable[[], Instant],
    hand_back: Callable[[Instant], None] | None = None,
) -> Facts:
    """Wait until the reset the provider told of (at once when it has passed: a resumed run
    waits only what is left of it). An interruption ends the wait; the resumed run waits again
    until the same moment, which the log keeps. ``hand_back`` (a queue worker's) is told of a
    wait longer than :data:`HAND_BACK_AFTER_S` first: it interrupts the run and gives its
    ticket back until the reset."""
    remaining = (effect.until - clock()).total_seconds()
    if hand_back is not None and remaining > HAND_BACK_AFTER_S:
        hand_back(effect.until)
    if remaining > 0:
        sleep(remaining)
    return (LimitResetAwaited(role=effect.role, until=effect.until, at=clock()),)


def runtime_spent(
    deadline: datetime | None, limit: int | None, clock: Callable[[], Instant]
) -> tuple[BudgetExceeded, ...]:
    """``BudgetExceeded`` when the runtime budget (``limit`` seconds, spent at ``deadline``)
    is spent, else nothing."""
    if deadline is None:
        return ()
    now = clock()
    if now < deadline:
        return ()
    detail = f"ran past the {limit} s runtime budget (deadline {deadline.isoformat()})"
    return (BudgetExceeded(budget=BudgetKind.RUNTIME, detail=detail, at=now),)
