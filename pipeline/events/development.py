"""Development facts: iterations started and completed, and the hat a topology's iteration
woke (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    INSTANT_VALIDATOR,
    ORDINAL_VALIDATOR,
    Instant,
    IterationStatus,
    Ordinal,
)

__all__ = [
    "DevelopmentEvent",
    "DevelopmentIterationCompleted",
    "DevelopmentIterationStarted",
    "HatActivated",
]


@final
@frozen(kw_only=True)
class DevelopmentIterationStarted:
    """Development iteration ``iteration`` began."""

    iteration: Ordinal = field(validator=ORDINAL_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class DevelopmentIterationCompleted:
    """The developer finished iteration ``iteration`` and judged it ``status``."""

    iteration: Ordinal = field(validator=ORDINAL_VALIDATOR)
    status: IterationStatus
    summary: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class HatActivated:
    """Iteration ``iteration`` of a run of a user's topology began: hat ``hat`` was woken by
    ``topic`` (the reducer chose both; this records that the activation started)."""

    iteration: Ordinal = field(validator=ORDINAL_VALIDATOR)
    hat: str
    topic: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


DevelopmentEvent: TypeAlias = (
    DevelopmentIterationStarted | DevelopmentIterationCompleted | HatActivated
)
"""Facts of the development phase."""
