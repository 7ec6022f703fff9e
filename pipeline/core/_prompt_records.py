"""What a working prompt tells its agent about publishing and where the run stands (pure data).

One shape for two readers: the prompt effect (``MaterializePrompt``) carries these records,
and the MCP card (``pipeline.handlers.intake._card``) is structured into them. The card is
read by ``ralph mcp`` on an agent's first tool call, so this module imports attrs alone, not
the events: its fields are plain values (a phase is its name), which the card holds as JSON.
Both quote what agents wrote in one :func:`fenced` block.
"""

from __future__ import annotations

import re
from typing import final

from attrs import frozen

__all__ = ["Publishing", "Standing", "fenced"]

_BACKTICKS = re.compile(r"`{3,}")


def fenced(text: str, language: str) -> str:
    """``text`` in a code fence longer than any run of backticks inside it."""
    fence = "`" * max([3, *(len(run) + 1 for run in _BACKTICKS.findall(text))])
    return f"{fence}{language}\n{text}\n{fence}"


@final
@frozen(kw_only=True)
class Publishing:
    """What a prompt tells its agent about publishing topics (decided from the run's policy)."""

    publishes: tuple[str, ...]
    """The topic patterns the role's hat may publish (empty: no hat names any)."""
    enforced: bool
    """Whether ralph ignores topics outside ``publishes``."""
    completion_promise: str | None
    cancellation_promise: str | None = None
    """The topic that ends the run at once (None: the run has none)."""
    required_missing: tuple[str, ...]
    """Required events not yet published: the completion promise is refused until they are."""
    human_topic: str | None
    """The topic that asks a person and waits for the answer (None: questions are off)."""


@final
@frozen(kw_only=True)
class Standing:
    """Where the run stands as the prompt is written: its phase, count and budget."""

    phase: str
    """The phase's name (``Phase.value``)."""
    step: str
    """The step's name (``Step.value``)."""
    iteration: int
    max_iterations: int | None
    review_pass: int
    max_review_passes: int | None
    """None: the run does not count review passes (a topology routes between hats)."""
    cost_usd: float
    """The known cost so far."""
    max_cost_usd: float | None
    unknown_cost: bool
    """Whether some invocation's cost is unknown, so ``cost_usd`` is a lower bound."""
