"""The handler port: carry out one effect, report what happened as events (impure by nature).

A handler never decides policy. Expected failures (an agent that exits 1, a rebase conflict)
are reported as events; only bugs raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from pipeline.effects import Effect
from pipeline.events import PipelineEvent

__all__ = ["EffectHandler"]


class EffectHandler(Protocol):
    """Carries out ``effect`` and returns the facts it observed, in order."""

    def __call__(self, effect: Effect, /) -> Sequence[PipelineEvent]:
        """Carry out ``effect``; return what happened."""
        ...
