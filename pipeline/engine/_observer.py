"""What the engine tells the outside world: one observer of a run (impure: observers act).

The engine reports every effect it carries out, every fact it stores (with the state it
folded to), every warning, and one span per effect to a single :class:`RunObserver`. A live
view, a tracer and a logfile are each one observer; :class:`Observers` fans one report out
to several. Observing never changes what the run does: an observer is told, it is not asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

from pipeline.core.effects import Effect
from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers import EffectSpan, EffectTracer

__all__ = ["Observers", "RunObserver", "TracingObserver"]


class RunObserver(Protocol):
    """Watches a run. Every method does nothing by default: subclass and override the
    reports you want."""

    def effect(self, effect: Effect, /) -> None:
        """``effect`` is about to be carried out (the start of a new run and checkpoints
        included)."""
        return

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        """``event`` is stored; ``state`` is the state it folded to."""
        return

    def warning(self, message: str, /) -> None:
        """Something the person should know that does not stop the run (a checkpoint that
        failed to verify, a setting that cannot be honoured)."""
        return

    def span(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> AbstractContextManager[EffectSpan] | None:
        """A span around carrying ``effect`` out, decided at ``sequence`` of ``run_id`` (None:
        not started yet); the span records the facts it produced. None: this observer does
        not trace (the engine then opens no context for it)."""
        return None


class TracingObserver(RunObserver):
    """An observer that traces: each effect carried out is one span of ``tracer``."""

    __slots__ = ("_tracer",)

    def __init__(self, tracer: EffectTracer) -> None:
        self._tracer = tracer

    def span(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> AbstractContextManager[EffectSpan]:
        """The tracer's span for ``effect``."""
        return self._tracer.effect(run_id, sequence, effect)


class _Spans:
    """Several spans as one: the facts are recorded into each."""

    __slots__ = ("_spans",)

    def __init__(self, spans: Sequence[EffectSpan]) -> None:
        self._spans = spans

    def record(self, facts: Sequence[PipelineEvent], /) -> None:
        for span in self._spans:
            span.record(facts)


_UNTRACED = contextlib.nullcontext(_Spans(()))
"""The span of an effect no observer traces: its facts are recorded nowhere."""


def span_of(
    observer: RunObserver, run_id: RunId | None, sequence: int, effect: Effect
) -> AbstractContextManager[EffectSpan]:
    """``observer``'s span around carrying ``effect`` out, or one that records nothing when
    the observer does not trace (so the engine has one way to carry an effect out)."""
    span = observer.span(run_id, sequence, effect)
    return _UNTRACED if span is None else span


class Observers(RunObserver):
    """Several observers as one: each report goes to every observer, in the order given."""

    __slots__ = ("_observers",)

    def __init__(self, *observers: RunObserver) -> None:
        self._observers = observers

    def effect(self, effect: Effect, /) -> None:
        """Tell every observer."""
        for observer in self._observers:
            observer.effect(effect)

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        """Tell every observer."""
        for observer in self._observers:
            observer.event(state, event)

    def warning(self, message: str, /) -> None:
        """Tell every observer."""
        for observer in self._observers:
            observer.warning(message)

    def span(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> AbstractContextManager[EffectSpan] | None:
        """One span made of each tracing observer's (nested in the order given); None when
        none of them traces."""
        opened = [o.span(run_id, sequence, effect) for o in self._observers]
        spans = [span for span in opened if span is not None]
        if not spans:
            return None
        if len(spans) == 1:
            return spans[0]
        return _nested(spans)


@contextlib.contextmanager
def _nested(spans: Sequence[AbstractContextManager[EffectSpan]]) -> Iterator[EffectSpan]:
    """Enter every span, the first outermost, and record into all of them."""
    with contextlib.ExitStack() as stack:
        yield _Spans([stack.enter_context(span) for span in spans])
