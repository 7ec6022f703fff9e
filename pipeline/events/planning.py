"""Planning facts: the planner started, produced a plan, or an unusable one (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Digest, Instant

__all__ = ["PlanProduced", "PlanRejected", "PlanningEvent", "PlanningStarted"]


@final
@frozen
class PlanningStarted:
    """The planning phase began."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class PlanProduced:
    """The planner wrote a usable plan (its content digest identifies it)."""

    plan_digest: Digest
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class PlanRejected:
    """The planner finished but its plan is missing or invalid (the reason says which)."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


PlanningEvent: TypeAlias = PlanningStarted | PlanProduced | PlanRejected
"""Facts of the planning phase."""
