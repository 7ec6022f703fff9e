"""Drive a pipeline in memory: next effect, handler, fold, until the run is complete.

This is the loop without durability, for simulations, tests and embedding with a custom store.
The durable runner adds the event store and checkpoints around the same steps.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from pipeline.effects import Effect, Terminate
from pipeline.errors import PipelineError
from pipeline.events import PipelineEvent
from pipeline.handlers import EffectHandler
from pipeline.orchestration import next_effect
from pipeline.reducers import reduce
from pipeline.state import PipelineState, is_complete

__all__ = ["LoopBoundExceededError", "RunResult", "run_in_memory"]


class LoopBoundExceededError(PipelineError, RuntimeError):
    """The run took more effects than the bound it was given."""


@frozen
class RunResult:
    """The end of an in-memory run: final state, every event in order, and the effects taken."""

    state: PipelineState
    events: tuple[PipelineEvent, ...]
    effects: tuple[Effect, ...]


def run_in_memory(
    handler: EffectHandler,
    state: PipelineState | None = None,
    *,
    max_effects: int | None = None,
    on_event: Callable[[PipelineState, PipelineEvent], None] | None = None,
) -> RunResult:
    """Run from ``state`` (a fresh run when omitted) until it is complete or asks to terminate.

    ``max_effects`` guards against a handler that never lets the run end; ``on_event`` sees
    every event with the state it produced (for progress output).
    """
    current = PipelineState() if state is None else state
    events: list[PipelineEvent] = []
    effects: list[Effect] = []
    while not is_complete(current):
        effect = next_effect(current)
        if isinstance(effect, Terminate):
            break
        if max_effects is not None and len(effects) >= max_effects:
            raise LoopBoundExceededError(
                f"the run took more than {max_effects} effects; the last was {effect!r}"
            )
        effects.append(effect)
        for event in handler(effect):
            current = reduce(current, event)
            events.append(event)
            if on_event is not None:
                on_event(current, event)
    return RunResult(current, tuple(events), tuple(effects))
