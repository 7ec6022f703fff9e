"""What a run does about its providers' limits (pure data): ``[limits]`` in ``ralph.toml``,
recorded in ``RunStarted`` as ``LoopPolicy.limits`` (see :mod:`.limits` for the facts)."""

from __future__ import annotations

import enum
from typing import Any, Final, final

from attrs import Attribute, field, frozen
from attrs.validators import optional

from pipeline.events.values import COUNT_VALIDATOR, Count

__all__ = ["DEFAULT_MAX_LIMIT_WAIT_S", "LimitPolicy", "OnUsageLimit"]

DEFAULT_MAX_LIMIT_WAIT_S: Final = 6 * 3600
"""The longest wait for a reset by default: a five-hour window fits, a weekly one stops."""


@enum.unique
class OnUsageLimit(enum.StrEnum):
    """What a run does when its provider limits it until a known reset."""

    WAIT = "wait"
    """Wait until the reset (at most ``max_wait_s``; a later reset stops the run), then go on
    with the same agent."""
    FALLBACK = "fallback"
    """Go on at once with the next agent of the role's chain; with none left, wait as above."""
    STOP = "stop"
    """Stop the run, resumably: ``ralph resume`` once the window has reset."""


def _share(_instance: object, attribute: Attribute[Any], value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise ValueError(f"{attribute.name} must be above 0 and at most 1, got {value!r}")


@final
@frozen(kw_only=True)
class LimitPolicy:
    """What a run does about its providers' limits (``[limits]`` in ``ralph.toml``), recorded
    in ``RunStarted`` so that replay needs no configuration."""

    on_usage_limit: OnUsageLimit = OnUsageLimit.WAIT
    max_wait_s: Count = field(default=Count(DEFAULT_MAX_LIMIT_WAIT_S), validator=COUNT_VALIDATOR)
    """The longest the run waits for one reset; a reset further away stops it, resumably."""
    stop_at_utilization: float | None = field(default=None, validator=optional(_share))
    """Stop the run for a person, resumably, before an agent starts once a provider reported
    a usage window this full (0.9: 90%); None: never."""
