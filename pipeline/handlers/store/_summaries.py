"""The ``run_summaries`` projection of the SQLite store: each run's spend in all as of its
head, so that ``ralph runs`` lists the runs and their cost without decoding an event.

A keyed projection (one row per run, replaced at each append), written in the append's
transaction like every projection (:mod:`pipeline.handlers.store._projection`): its figures
are the fold's own (``state.ledger.spend.total`` after ``reduce``), not a sum kept beside it.
A row whose ``sequence`` is behind its run's head (a store written before the table, an
append by an older release) is not used by readers: they fold the log themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent, RunId

__all__ = ["RUN_SUMMARIES", "RunSummaries"]


@final
class RunSummaries:
    """One row per run: its head and its spend in all as of that head."""

    table: Final = "run_summaries"
    columns: Final = ("run_id", "sequence", "invocations", "cost_usd", "unknown_cost")
    key: Final = ("run_id",)
    order: Final = "run_id"

    def rows(
        self, run_id: RunId, before: PipelineState, event: PipelineEvent, after: PipelineState
    ) -> Iterable[tuple[object, ...]]:
        """The run's row as of ``event`` (the store keeps the last of an append's)."""
        total = after.ledger.spend.total
        return ((run_id, after.sequence, total.invocations, total.cost_usd, total.unknown_cost),)


RUN_SUMMARIES: Final = RunSummaries()
"""The run summaries, as the SQLite store keeps them by default."""
