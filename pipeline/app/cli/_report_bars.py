"""One agent invocation (an ``InvocationBar``) as the cells of a table, shared by ``ralph
report`` and ``ralph serve`` (pure: strings out; the caller escapes them for its format)."""

from __future__ import annotations

from pipeline.app.cli._report_layout import seconds_text
from pipeline.reducers.views import InvocationBar, cost_text, spend_line

__all__ = [
    "HEADS",
    "agent_cell",
    "bar_cells",
    "cost_cell",
    "marks",
    "notes",
    "tokens_cell",
    "worn",
]

HEADS = ("#", "phase", "role", "agent", "attempt", "outcome", "duration", "tokens", "cost")
"""The heads of :func:`bar_cells`."""


def bar_cells(bar: InvocationBar) -> tuple[str, ...]:
    """The invocation's cells under :data:`HEADS` (one still at work shows as running)."""
    return (
        str(bar.number),
        bar.phase.value,
        worn(bar),
        agent_cell(bar),
        str(bar.attempt),
        bar.outcome.value,
        seconds_text(bar.duration_s),
        tokens_cell(bar),
        cost_cell(bar),
    )


def marks(bar: InvocationBar) -> list[str]:
    """Retry, fallback and flags of ``bar``, in words."""
    marks = []
    if bar.is_retry:
        marks.append(f"retry {bar.retries} of {bar.agent}")
    if bar.is_fallback:
        marks.append(f"fallback (agent {bar.chain_position + 1} of the chain)")
    if bar.malformed_lines:
        marks.append(f"{bar.malformed_lines} malformed line(s)")
    if bar.scope_violations:
        marks.append(f"{bar.scope_violations} scope violation(s)")
    return marks


def notes(bar: InvocationBar) -> str:
    """The notes column: the marks, the outcome's detail, and what the usage fact noted (the
    CLI's own retries, why the cost is unknown)."""
    said = bar.usage.note if bar.usage is not None else ""
    return "; ".join(part for part in (*marks(bar), bar.detail, said) if part)


def tokens_cell(bar: InvocationBar) -> str:
    return "-" if bar.usage is None else f"{bar.usage.tokens:,}"


def cost_cell(bar: InvocationBar) -> str:
    """The cost ``bar`` reported: dollars, ``unknown``, or ``-`` when it reported no usage."""
    return "-" if bar.usage is None else cost_text(spend_line((bar.usage,)))


def worn(bar: InvocationBar) -> str:
    """The role, and the topology hat it worked as."""
    return bar.role.value if bar.hat is None else f"{bar.role.value} ({bar.hat})"


def agent_cell(bar: InvocationBar) -> str:
    """The agent, and the model it ran when the run chose one (a hat's or its ladder's)."""
    return bar.agent if not bar.model else f"{bar.agent} ({bar.model})"
