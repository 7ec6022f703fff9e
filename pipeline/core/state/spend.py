"""What a run spent: invocations, cost and tokens, in total and per role and model (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import final

from attrs import field, frozen

from pipeline.events.agent import UsageReported
from pipeline.events.values import (
    AgentName,
    Role,
)

__all__ = ["Spend", "SpendLine"]


@final
@frozen(kw_only=True)
class SpendLine:
    """What a set of invocations used: tokens, and the cost where it is known."""

    invocations: int = 0
    """Invocations with a usage fact."""
    cost_usd: float = 0.0
    """The sum of the known costs (reported or estimated)."""
    unknown_cost: int = 0
    """Invocations whose cost is unknown (not in ``cost_usd``)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def plus(self, usage: UsageReported) -> SpendLine:
        """This line with one more invocation's usage added (an unknown cost counted apart)."""
        return SpendLine(
            invocations=self.invocations + 1,
            cost_usd=self.cost_usd + (usage.cost_usd or 0.0),
            unknown_cost=self.unknown_cost + (usage.cost_usd is None),
            input_tokens=self.input_tokens + (usage.input_tokens or 0),
            output_tokens=self.output_tokens + (usage.output_tokens or 0),
            cache_read_tokens=self.cache_read_tokens + (usage.cache_read_tokens or 0),
            cache_write_tokens=self.cache_write_tokens + (usage.cache_write_tokens or 0),
        )

    @property
    def tokens(self) -> int:
        """Every token counted: input (cached or not) and output."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + (self.cache_write_tokens)
        )


@final
@frozen(kw_only=True)
class Spend:
    """The run's usage ledger, folded from its usage facts: in all, per role, per agent and
    per model, and since the run last made progress (a commit with changes)."""

    total: SpendLine = SpendLine()
    by_role: Mapping[Role, SpendLine] = field(factory=dict)
    by_agent: Mapping[AgentName, SpendLine] = field(factory=dict)
    by_model: Mapping[str, SpendLine] = field(factory=dict)
    """Keyed by model name; ``""`` for invocations whose model is unknown."""
    since_commit: SpendLine = SpendLine()
    """What the invocations since the last commit with changes used: the next commit's
    ``Ralph-Cost`` trailer, and what the breaker (``max_cost_without_progress_usd``) counts."""
    models_since_commit: tuple[str, ...] = ()
    """The models of those invocations, in the order first seen (``""``: unknown); the next
    commit's ``Ralph-Model`` trailer."""
