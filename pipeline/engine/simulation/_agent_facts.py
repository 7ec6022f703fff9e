"""The facts of a simulated agent invocation beside its outcome: what it used, and a
provider's limit (pure: chosen by the world's chooser, timed by its clock)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Final

from pipeline.core.effects import InvokeAgent
from pipeline.engine.simulation._choosers import Chooser
from pipeline.engine.simulation._config import USAGE_CHOICE, USAGE_UNIT_USD
from pipeline.events import (
    CostSource,
    Count,
    Instant,
    LimitScope,
    PipelineEvent,
    ProviderLimited,
    UsageReported,
    Usd,
)

__all__ = ["LIMIT_RESETS", "limited", "usage"]

LIMIT_RESETS: Final[tuple[timedelta | None, ...]] = (None, timedelta(minutes=5), timedelta(days=6))
"""When a simulated provider limit resets: untold, soon, or further away than any wait."""


def limited(effect: InvokeAgent, chooser: Chooser, clock: Callable[[], Instant]) -> ProviderLimited:
    """The provider's limit: with no reset told, one soon, or one past any wait."""
    now = clock()
    later = chooser.pick(LIMIT_RESETS, "limit reset")
    resets_at = None if later is None else Instant(now + later)
    return ProviderLimited(
        role=effect.role,
        agent=effect.agent,
        scope=LimitScope.USAGE_WINDOW if later else LimitScope.REQUESTS,
        resets_at=resets_at,
        window="five_hour" if later else None,
        source="simulated",
        message="usage limit reached",
        at=now,
    )


def usage(
    effect: InvokeAgent, chooser: Chooser, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """What the invocation used, in units of 1,000 tokens and $0.25 (none: an agent
    whose output reports nothing, which is also what a script gets unless it asks)."""
    units = chooser.number(0, 4, USAGE_CHOICE)
    if units == 0:
        return ()
    tokens = Count(units * 1_000)
    return (
        UsageReported(
            role=effect.role,
            agent=effect.agent,
            model="simulated",
            input_tokens=tokens,
            output_tokens=Count(units * 100),
            cache_read_tokens=Count(0),
            cache_write_tokens=Count(0),
            turns=Count(1),
            session_id=None,
            api_duration_ms=None,
            cost_usd=Usd(units * USAGE_UNIT_USD),
            cost_source=CostSource.REPORTED,
            note="",
            at=clock(),
        ),
    )
