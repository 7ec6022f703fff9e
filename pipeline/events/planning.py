"""Planning facts: the planner started, produced a plan, or an unusable one (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, ORDINAL_VALIDATOR, Digest, Instant, Ordinal

__all__ = ["PlanProduced", "PlanRejected", "PlanningEvent", "PlanningStarted"]


@final
@frozen(kw_only=True)
class PlanningStarted:
    """The planning phase began."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class PlanProduced:
    """The planner wrote a usable plan for iteration ``iteration`` (its digest identifies it)."""

    iteration: Ordinal = field(validator=ORDINAL_VALIDATOR)
    plan_digest: Digest
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class PlanRejected:
    """The planner finished but its plan is missing or invalid (the reason says which)."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


PlanningEvent: TypeAlias = PlanningStarted | PlanProduced | PlanRejected
"""Facts of the planning phase."""
