"""Drive a pipeline in memory: the durable runner over an in-memory store.

For simulations, tests and embedding where nothing must outlive the process. It is the same
loop as :func:`~pipeline.engine.run_durable` (checkpoints, redaction, interruption and all),
over a :class:`~pipeline.handlers.store.MemoryEventStore`, so what a simulation shows is what a
stored run does.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.effects import Effect, Terminate
from pipeline.core.state import PipelineState, is_complete
from pipeline.engine._durable import HookRunner, run_durable, utc_now
from pipeline.events import Instant, PipelineEvent
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


def run_in_memory(
    handler: EffectHandler,
    *,
    max_effects: int | None = None,
    on_event: Callable[[PipelineState, PipelineEvent], None] | None = None,
    clock: Callable[[], Instant] = utc_now,
    store: RunStore | None = None,
    on_hook: HookRunner | None = None,
) -> RunResult:
    """Start a run and carry it on until it is complete or asks to terminate.

    ``max_effects`` (the effects after the run's start) guards against a handler that never
    lets the run end (:class:`LoopBoundExceededError`); ``on_event`` sees every event with the
    state it produced; ``clock`` stamps the facts the runner records itself (checkpoints,
    resumes); ``store`` keeps the log (a new in-memory store when omitted); ``on_hook`` runs the
    run's lifecycle hooks (a run whose policy has hooks needs one). As in a stored run, facts
    pass the redactor of this process's environment before they are kept.
    """
    store = MemoryEventStore() if store is None else store
    effects: list[Effect] = []
    run = run_durable(
        store,
        handler,
        clock=clock,
        max_effects=max_effects,
        on_event=on_event,
        on_effect=effects.append,
        on_hook=on_hook,
    )
    state = run.state
    if not is_complete(state):
        effect = next_effect(state)
        if not isinstance(effect, Terminate):
            raise LoopBoundExceededError(
                f"the run took more than {max_effects} effects; the next was {effect!r}"
            )
    return RunResult(state=state, events=tuple(store.read(run.run_id)), effects=tuple(effects))
