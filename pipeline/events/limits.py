"""Provider limits: an invocation that ended on its provider's limit, the wait for the limit's
reset, and the run's policy for both (pure data).

A provider limit is no failure of the agent: the provider refused more requests for a while
(a rate limit, minutes) or until a usage window resets (a subscription's five-hour or weekly
window, a daily quota, hours or days). The handler reads it from the agent CLI's structured
output (``docs/architecture/limits.md``); the reducer decides what the run does from
``LoopPolicy.limits``: wait until the reset (its deadline in the log, so a resumed or taken
over run waits until the same moment), fall back to the next agent of the chain, or stop,
resumably (:mod:`.limit_policy`).
"""

from __future__ import annotations

import enum
from typing import Any, final

from attrs import Attribute, field, frozen
from attrs.validators import optional

from pipeline.events.values import (
    INSTANT_VALIDATOR,
    AgentName,
    Instant,
    Role,
)

__all__ = ["LimitResetAwaited", "LimitScope", "ProviderLimited", "UsageWindowReported"]


def _share(_instance: object, attribute: Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ValueError(f"{attribute.name} must be a share from 0 (1 is full), got {value!r}")


@enum.unique
class LimitScope(enum.StrEnum):
    """What the provider limited."""

    REQUESTS = "requests"
    """A rate limit or an overloaded provider: seconds to minutes."""
    USAGE_WINDOW = "usage_window"
    """A subscription's usage window or a quota: until the window resets, hours or days."""


@final
@frozen(kw_only=True)
class ProviderLimited:
    """Agent ``agent``'s invocation in ``role`` ended because its provider limited it: for
    its ``scope``, until ``resets_at`` when the provider said (None: it did not), for the
    ``window`` the provider named (``five_hour``, ``seven_day``; None: unnamed). ``source``
    says which structured signal told it; ``message`` is the provider's own words."""

    role: Role
    agent: AgentName
    scope: LimitScope
    resets_at: Instant | None = field(validator=optional(INSTANT_VALIDATOR))
    window: str | None
    source: str
    message: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class LimitResetAwaited:
    """The run waited for ``role``'s provider limit until ``until``, the reset it was told."""

    role: Role
    until: Instant = field(validator=INSTANT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class UsageWindowReported:
    """Agent ``agent``'s provider reported, in its invocation in ``role``, how full its fullest
    usage ``window`` is (``utilization``, 0 to 1, as the provider counts it), which resets at
    ``resets_at`` (None: untold)."""

    role: Role
    agent: AgentName
    window: str
    utilization: float = field(validator=_share)
    resets_at: Instant | None = field(validator=optional(INSTANT_VALIDATOR))
    at: Instant = field(validator=INSTANT_VALIDATOR)
