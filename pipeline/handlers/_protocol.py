"""The handler port: carry out one effect, report what happened as events (impure by nature).

A handler never decides policy. Expected failures (an agent that exits 1, a rebase conflict)
are reported as events; only bugs raise. A handler returns its facts at once, or, for work that
takes long, yields them in steps: the runner records each step before the handler goes on, so
``InvocationStarted`` is in the log while the agent is still at work.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol, TypeAlias

from pipeline.core.effects import Effect
from pipeline.events import PipelineEvent, RunId

__all__ = ["EffectHandler", "EffectSpan", "EffectTracer", "HandlerResult", "facts_of", "steps_of"]

HandlerResult: TypeAlias = Sequence[PipelineEvent] | Iterator[Sequence[PipelineEvent]]
"""What a handler reports: its facts, or an iterator of steps of facts, each recorded before
the next is asked for."""


class EffectHandler(Protocol):
    """Carries out ``effect`` and reports the facts it observed, in order."""

    def __call__(self, effect: Effect, /) -> HandlerResult:
        """Carry out ``effect``; report what happened (at once, or in steps)."""
        ...


def steps_of(result: HandlerResult) -> Iterator[Sequence[PipelineEvent]]:
    """The steps of a handler's report: one step when it reported its facts at once."""
    if isinstance(result, Sequence):
        yield result
    else:
        yield from result


def facts_of(result: HandlerResult) -> list[PipelineEvent]:
    """Every fact of a handler's report, its steps run to the end (for callers that record
    nothing between steps)."""
    return [fact for step in steps_of(result) for fact in step]


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
