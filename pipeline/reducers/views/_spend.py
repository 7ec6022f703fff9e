"""What invocations used and cost, in words for people and commit trailers (pure).

A cost the agent did not report and ralph could not estimate is shown as unknown, never as
$0: a sum of known costs names how many invocations it leaves out
(``$0.42 + 3 of unknown cost``).
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.core.state import SpendLine
from pipeline.events import UsageReported

__all__ = [
    "cost_text",
    "dollars",
    "models_text",
    "spend_line",
    "spend_summary",
    "tokens_text",
    "usage_text",
]

_UNKNOWN = "unknown"


def dollars(amount: float) -> str:
    """``amount`` in US dollars: four decimals under a dollar (agent calls cost cents), two
    above."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:,.2f}"


def cost_text(line: SpendLine) -> str:
    """The known cost of ``line``'s invocations, and how many are of unknown cost:
    ``$0.0123``, ``$0.42 + 3 of unknown cost`` or ``unknown`` (nothing known, or nothing
    reported at all)."""
    known = line.invocations - line.unknown_cost
    if known <= 0:
        return _UNKNOWN
    if line.unknown_cost:
        return f"{dollars(line.cost_usd)} + {line.unknown_cost} of unknown cost"
    return dollars(line.cost_usd)


def tokens_text(line: SpendLine) -> str:
    """Every token of ``line`` and its parts: ``1,234 (in 1,000, out 200, cache read 34)``;
    the cache parts only when there are some."""
    parts = [f"in {line.input_tokens:,}", f"out {line.output_tokens:,}"]
    if line.cache_read_tokens:
        parts.append(f"cache read {line.cache_read_tokens:,}")
    if line.cache_write_tokens:
        parts.append(f"cache write {line.cache_write_tokens:,}")
    return f"{line.tokens:,} ({', '.join(parts)})"


def models_text(models: tuple[str, ...]) -> str:
    """The models, comma-separated (``""``, a model no output named, as ``unknown``);
    ``unknown`` when there are none."""
    return ", ".join(model or _UNKNOWN for model in models) or _UNKNOWN


def usage_text(usage: UsageReported | None) -> str:
    """One invocation's usage on one line: tokens, cost and where the cost came from (or why
    it is unknown); says so when the invocation reported none."""
    if usage is None:
        return "no usage reported"
    if usage.cost_usd is None:
        cost = f"cost unknown ({usage.note})" if usage.note else "cost unknown"
    else:
        said = f"; {usage.note}" if usage.note else ""
        cost = f"{dollars(usage.cost_usd)} ({usage.cost_source.value}){said}"
    model = f"{usage.model}: " if usage.model else ""
    return f"{model}{usage.tokens:,} tokens, {cost}"


def spend_line(usages: Iterable[UsageReported | None]) -> SpendLine:
    """The sum of ``usages`` as the ledger adds them (None, an invocation that reported
    nothing, adds nothing)."""
    line = SpendLine()
    for usage in usages:
        if usage is not None:
            line = line.plus(usage)
    return line


def spend_summary(line: SpendLine) -> str:
    """Cost and tokens on one line: ``$0.42 + 3 of unknown cost, 12,345 tokens``, or that no
    invocation reported usage."""
    if line.invocations == 0:
        return "no usage reported"
    return f"{cost_text(line)}, {line.tokens:,} tokens"
