"""The handler port: carry out one effect, report what happened as events (impure by nature).

A handler never decides policy. Expected failures (an agent that exits 1, a rebase conflict)
are reported as events; only bugs raise.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from pipeline.effects import Effect
from pipeline.events import PipelineEvent, RunId

__all__ = ["EffectHandler", "EffectSpan", "EffectTracer"]


class EffectHandler(Protocol):
    """Carries out ``effect`` and returns the facts it observed, in order."""

    def __call__(self, effect: Effect, /) -> Sequence[PipelineEvent]:
        """Carry out ``effect``; return what happened."""
        ...


class EffectSpan(Protocol):
    """One effect being carried out, as a tracer sees it."""

    def record(self, facts: Sequence[PipelineEvent], /) -> None:
        """The facts the effect produced (called once, before the span ends)."""
        ...


class EffectTracer(Protocol):
    """Watches every effect a runner carries out, the runner's own checkpoints included.

    The runner enters ``effect(...)`` around each effect and records its facts into the span;
    an exception from the handler leaves the context with it. Tracing observes, it never
    changes what the run does.
    """

    def effect(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> AbstractContextManager[EffectSpan]:
        """A span for ``effect``, decided at ``sequence`` of ``run_id`` (None: not started)."""
        ...
