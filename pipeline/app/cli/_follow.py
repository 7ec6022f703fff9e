"""Reading a run's events as they are appended, from another process (I/O: polls the store)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator

from pipeline.core.state import PipelineState, is_complete
from pipeline.events import CATEGORIES, PipelineEvent, RunId
from pipeline.handlers.store import EventLog
from pipeline.reducers import reduce

__all__ = ["category_filter", "follow"]


def category_filter(names: Iterable[str]) -> Callable[[PipelineEvent], bool]:
    """A predicate keeping events of the named categories (every event when none is named).

    Raises ``ValueError`` naming the known categories for a name that is not one.
    """
    chosen = list(dict.fromkeys(names))
    unknown = [name for name in chosen if name not in CATEGORIES]
    if unknown:
        raise ValueError(
            f"unknown categor{'ies' if len(unknown) > 1 else 'y'} {', '.join(unknown)} "
            f"(known: {', '.join(CATEGORIES)})"
        )
    if not chosen:
        return lambda _event: True
    unions = tuple(CATEGORIES[name] for name in chosen)
    return lambda event: isinstance(event, unions)


def follow(
    store: EventLog,
    run_id: RunId,
    *,
    poll_s: float = 0.25,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[tuple[int, PipelineEvent]]:
    """Every event of the run with its position, then each new one as it is appended, until
    the fold of the log says the run has stopped (complete, or interrupted) with its last
    checkpoint saved, or the caller stops iterating."""
    state = PipelineState()
    while True:
        for event in store.read(run_id, state.sequence):
            position = state.sequence
            state = reduce(state, event)
            yield position, event
        if is_complete(state):
            return
        sleep(poll_s)
