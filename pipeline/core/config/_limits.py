"""``[limits]`` in ``ralph.toml``: what a run does when an agent's provider limits it (pure).

Checked when the file is parsed (:func:`check_limits` names each mistake with its key), and
turned into the :class:`~pipeline.events.LimitPolicy` a run records in ``RunStarted``
(``docs/architecture/limits.md``).
"""

from __future__ import annotations

from typing import final

from attrs import frozen

from pipeline.events import DEFAULT_MAX_LIMIT_WAIT_S, Count, LimitPolicy, OnUsageLimit

__all__ = ["LimitsConfig", "check_limits"]


@final
@frozen(kw_only=True)
class LimitsConfig:
    """``[limits]``: ``on_usage_limit`` (``wait``, ``fallback`` or ``stop``), the longest
    wait for one reset, ``max_wait_s`` (a reset further away stops the run, resumably), and
    ``stop_at_utilization``."""

    on_usage_limit: OnUsageLimit = OnUsageLimit.WAIT
    max_wait_s: int = DEFAULT_MAX_LIMIT_WAIT_S
    stop_at_utilization: float | None = None
    """Stop the run, resumably, once a provider reports a usage window this full (0.9)."""

    def policy(self) -> LimitPolicy:
        """The policy these settings ask for (of a configuration :func:`check_limits`
        found sound)."""
        return LimitPolicy(
            on_usage_limit=self.on_usage_limit,
            max_wait_s=Count(self.max_wait_s),
            stop_at_utilization=self.stop_at_utilization,
        )


def check_limits(limits: LimitsConfig) -> list[str]:
    """Every mistake in ``[limits]``, each naming its key (``max_wait_s``'s range is checked
    with every number's, in :mod:`._bounds`)."""
    problems = []
    share = limits.stop_at_utilization
    if share is not None and not 0 < share <= 1:
        problems.append(
            f"limits.stop_at_utilization: must be above 0 and at most 1 (0.9 is 90%), got {share}"
        )
    return problems
