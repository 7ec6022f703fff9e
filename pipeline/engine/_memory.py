"""Drive a pipeline in memory: the durable runner over an in-memory store.

For simulations, tests and embedding where nothing must outlive the process. It is the same
loop as :func:`~pipeline.engine.run_durable` (checkpoints, redaction, interruption and all),
over a :class:`~pipeline.handlers.store.MemoryEventStore`, so what a simulation shows is what a
stored run does.
"""

from __future__ import annotations

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.effects import Effect, Terminate
from pipeline.core.state import PipelineState, is_complete
from pipeline.engine._durable import _DEFAULTS, RunOptions, run_durable
from pipeline.engine._observer import Observers, RunObserver
from pipeline.engine._world import RunWorld
from pipeline.events import PipelineEvent
from pipeline.handlers import EffectHandler
from pipeline.handlers.store import MemoryEventStore, RunStore
from pipeline.orchestration import next_effect

__all__ = ["LoopBoundExceededError", "RunResult", "run_in_memory"]


class LoopBoundExceededError(PipelineError, RuntimeError):
    """The run took more effects than the bound it was given."""


@frozen(kw_only=True)
class RunResult:
    """The end of an in-memory run: final state, every event in order, and the effects taken."""

    state: PipelineState
    events: tuple[PipelineEvent, ...]
    effects: tuple[Effect, ...]


class _Kept(RunObserver):
    """Keeps every effect carried out."""

    __slots__ = ("effects",)

    def __init__(self) -> None:
        self.effects: list[Effect] = []

    def effect(self, effect: Effect, /) -> None:
        """Keep ``effect``."""
        self.effects.append(effect)


def run_in_memory(
    handler: EffectHandler,
    *,
    observer: RunObserver | None = None,
    world: RunWorld | None = None,
    options: RunOptions = _DEFAULTS,
    store: RunStore | None = None,
) -> RunResult:
    """Start a run and carry it on until it is complete or asks to terminate.

    ``options.max_effects`` (the effects after the run's start) guards against a handler that
    never lets the run end (:class:`LoopBoundExceededError`); ``observer`` is told what the
    run does and ``world`` answers what it asks, as in :func:`run_durable`; ``store`` keeps
    the log (a new in-memory store when omitted). As in a stored run, facts pass the redactor
    of this process's environment (unless ``options`` names one) before they are kept.
    """
    store = MemoryEventStore() if store is None else store
    kept = _Kept()
    seen = kept if observer is None else Observers(kept, observer)
    run = run_durable(store, handler, observer=seen, world=world, options=options)
    state = run.state
    if not is_complete(state):
        effect = next_effect(state)
        if not isinstance(effect, Terminate):
            raise LoopBoundExceededError(
                f"the run took more than {options.max_effects} effects; the next was {effect!r}"
            )
    return RunResult(state=state, events=tuple(store.read(run.run_id)), effects=tuple(kept.effects))
