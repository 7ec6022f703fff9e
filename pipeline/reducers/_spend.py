"""The run's usage ledger and its spend limits (pure).

Every ``UsageReported`` fact adds to the run's :class:`Spend`: in all, for its role, its agent
and its model. The limits (``Budget.max_cost_usd``, ``max_tokens``, ``role_max_cost_usd`` and
the breaker ``max_cost_without_progress_usd``) are checked at the boundaries where a new agent
invocation would begin (a new task, a retry or a fallback), never in the middle of one: a
spent budget ends the run there as ``max_cost``, the figures in ``last_error``. Only known
costs count towards a cost limit; an invocation of unknown cost is counted apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from attrs import evolve

from pipeline.core.state import PipelineState, Spend, SpendLine
from pipeline.events import Budget, UsageReported
from pipeline.reducers._build import advance

__all__ = ["fold_usage", "mark_progress", "spent_budget"]

K = TypeVar("K")


def _add(lines: Mapping[K, SpendLine], key: K, event: UsageReported) -> Mapping[K, SpendLine]:
    return {**lines, key: lines.get(key, _NONE).plus(event)}


_NONE = SpendLine()


def fold_usage(state: PipelineState, event: UsageReported) -> PipelineState:
    """``state`` with ``event``'s usage added to the ledger (money spent always counts)."""
    spend = state.ledger.spend
    model = event.model or ""
    models = spend.models_since_commit
    added = Spend(
        total=spend.total.plus(event),
        by_role=_add(spend.by_role, event.role, event),
        by_agent=_add(spend.by_agent, event.agent, event),
        by_model=_add(spend.by_model, model, event),
        since_commit=spend.since_commit.plus(event),
        models_since_commit=models if model in models else (*models, model),
    )
    return advance(state, ledger=evolve(state.ledger, spend=added))


def mark_progress(spend: Spend) -> Spend:
    """``spend`` as of a commit with changes: the breaker and the next commit's trailers
    count from here."""
    if spend.since_commit == _NONE and not spend.models_since_commit:
        return spend
    return evolve(spend, since_commit=_NONE, models_since_commit=())


def spent_budget(budget: Budget, spend: Spend) -> str | None:
    """Which spend limit is reached, with the figures; None while every one has room left."""
    if not budget.limits_spend:
        return None
    total = spend.total
    if budget.max_cost_usd is not None and total.cost_usd >= budget.max_cost_usd:
        return f"spent ${total.cost_usd:.4f} of max_cost_usd = ${budget.max_cost_usd:.4f}"
    if budget.max_tokens is not None and total.tokens >= budget.max_tokens:
        return f"used {total.tokens} tokens of max_tokens = {budget.max_tokens}"
    for role, limit in budget.role_max_cost_usd:
        used = spend.by_role.get(role, _NONE).cost_usd
        if used >= limit:
            return f"the {role.value} spent ${used:.4f} of its max_cost_usd = ${limit:.4f}"
    breaker = budget.max_cost_without_progress_usd
    since = spend.since_commit.cost_usd
    if breaker is not None and since >= breaker:
        return (
            f"spent ${since:.4f} since the last commit with changes, "
            f"max_cost_without_progress_usd = ${breaker:.4f}"
        )
    return None
