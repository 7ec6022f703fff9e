"""The ``run_summaries`` projection of the SQLite store: each run's spend in all as of its
head, written in the same transaction as the events (I/O), so that ``ralph runs`` lists the
runs and their cost without decoding an event.

The figures are the fold's own (``state.ledger.spend.total`` after ``reduce``), not a sum
kept beside it: the store folds the events it appends into the run's state, which it keeps
between appends. The first append of a run in a process loads that state as the engine does
(the newest checkpoint that verifies, plus the events after it); a log that cannot be folded
leaves the run without a current row, and readers then fold the log themselves.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Final

from pipeline import WireFormatError
from pipeline.core.serialization import CheckpointError, EncodedCheckpoint, checkpoint_state
from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers.store._port import StoreCorruptError
from pipeline.reducers import reduce

__all__ = ["RunSummaries"]

_KEPT_RUNS: Final = 8
"""How many runs' states a store keeps between appends (a process appends to one run, a
worker to a few in turn; a run not kept is loaded again at its next append)."""


class RunSummaries:
    """The states of the runs this store appends to, and the projection rows they give."""

    def __init__(self) -> None:
        self._states: dict[RunId, PipelineState] = {}

    def write(
        self,
        db: sqlite3.Connection,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        checkpoints: Callable[[], Iterable[EncodedCheckpoint]],
        read: Callable[[int], Iterator[PipelineEvent]],
    ) -> PipelineState | None:
        """Write ``run_id``'s row as of its new head, inside the append's transaction, and
        return the state to keep once it commits (:meth:`kept`); None, with the row
        removed, when the log before ``events`` cannot be folded."""
        state = self._states.get(run_id)
        if state is None or state.sequence != expected_sequence:
            state = _loaded(run_id, expected_sequence, checkpoints, read)
        if state is None:
            db.execute("DELETE FROM run_summaries WHERE run_id = ?", (run_id,))
            return None
        for event in events:
            state = reduce(state, event)
        total = state.ledger.spend.total
        db.execute(
            "INSERT OR REPLACE INTO run_summaries VALUES (?, ?, ?, ?, ?)",
            (run_id, state.sequence, total.invocations, total.cost_usd, total.unknown_cost),
        )
        return state

    def kept(self, run_id: RunId, state: PipelineState | None) -> None:
        """Keep ``state`` (None: forget the run) for the run's next append, once committed."""
        self._states.pop(run_id, None)
        if state is not None:
            if len(self._states) >= _KEPT_RUNS:
                del self._states[next(iter(self._states))]
            self._states[run_id] = state

    def forget(self, run_id: RunId) -> None:
        """Drop the kept state (the append rolled back: the log is as it was)."""
        self._states.pop(run_id, None)


def _loaded(
    run_id: RunId,
    head: int,
    checkpoints: Callable[[], Iterable[EncodedCheckpoint]],
    read: Callable[[int], Iterator[PipelineEvent]],
) -> PipelineState | None:
    """The run's state at ``head``, as the engine loads it; None when its log cannot be
    folded (a damaged row: the append goes on, readers see no current summary)."""
    state = PipelineState()
    if head == 0:
        return state
    try:
        for checkpoint in checkpoints():
            try:
                state = checkpoint_state(checkpoint, f"checkpoint {checkpoint.sequence}")
            except CheckpointError:
                continue
            break
        for event in read(state.sequence):
            state = reduce(state, event)
    except (WireFormatError, StoreCorruptError):
        return None
    return state if state.sequence == head else None
