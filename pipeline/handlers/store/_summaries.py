"""The SQLite store's summaries of each run, so that ``ralph runs`` and ``ralph status``
answer without decoding an event: ``run_summaries``, each run's spend in all as of its head,
and ``run_status``, what ``ralph status`` shows of it.

Keyed projections (a row per run, or per run and part, replaced at each append), written in
the append's transaction like every projection (:mod:`pipeline.handlers.store._projection`):
their figures are the fold's own (``state.ledger.spend.total`` after ``reduce``), not a sum
kept beside it. A summary whose ``sequence`` is behind its run's head (a store written before
the table, an append by an older release) is not used by readers: they fold the log
themselves.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, final

import orjson

from pipeline.core.state import PendingQuestion, PipelineState
from pipeline.events import (
    CommitCreated,
    PipelineEvent,
    RunId,
    SandboxChecked,
)
from pipeline.orchestration import effect_id
from pipeline.reducers.views import status_rows

__all__ = ["RUN_STATUS", "RUN_SUMMARIES", "RunStatus", "RunSummaries"]


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
        """None: the row is the run's state's (:meth:`at_head`)."""
        return ()

    def at_head(self, run_id: RunId, state: PipelineState) -> Iterable[tuple[object, ...]]:
        """The run's row as of its head."""
        total = state.ledger.spend.total
        return ((run_id, state.sequence, total.invocations, total.cost_usd, total.unknown_cost),)


RUN_SUMMARIES: Final = RunSummaries()
"""The run summaries, as the SQLite store keeps them by default."""


@final
class RunStatus:
    """What ``ralph status`` shows of each run, in parts keyed by name: ``state``, the rows
    of :func:`~pipeline.reducers.views.status_rows` as of the run's head (kept at every
    append; its ``sequence`` says how current it is); ``begun``, written with the run's first
    event (a run begun before the table has none, so its parts are known to be partial);
    ``sandbox``, the words of its last sandbox check; ``commit <sha>``, each commit it
    recorded, with the id of the effect it answered; ``question``, the question it waits on
    as of its head (empty: none), which ``ralph respond`` reads. What the rows cannot show
    (refused connections and screens, read from the log; a fork's commits, checked against
    its sources' history) the reader finds in the log's tags as it checks the chain, and
    folds the log then, as before."""

    table: Final = "run_status"
    columns: Final = ("run_id", "part", "sequence", "text")
    key: Final = ("run_id", "part")
    order: Final = "part"

    def rows(
        self, run_id: RunId, before: PipelineState, event: PipelineEvent, after: PipelineState
    ) -> Iterable[tuple[object, ...]]:
        """The part ``event`` adds, if any."""
        at = after.sequence
        if not before.sequence:
            yield run_id, "begun", at, ""
        match event:
            case SandboxChecked():
                yield run_id, "sandbox", at, event.said
            case CommitCreated():
                yield run_id, f"commit {event.sha}", at, str(effect_id(before))
            case _:
                pass

    def at_head(self, run_id: RunId, state: PipelineState) -> Iterable[tuple[object, ...]]:
        """The run's ``state`` and ``question`` parts as of its head."""
        # () rather than None: a run that screens shows "none yet" until its first screen.
        rows = orjson.dumps(status_rows(state, ())).decode()
        question = state.ledger.pending_question
        waits = "" if question is None else orjson.dumps(question_part(question)).decode()
        return (
            (run_id, "state", state.sequence, rows),
            (run_id, "question", state.sequence, waits),
        )


def question_part(question: PendingQuestion) -> tuple[str, bool, str]:
    """What ``ralph respond`` needs of the question a run waits on: its id, whether it was
    asked (only then can it be answered), and its words."""
    return question.question_id, question.asked, question.question


RUN_STATUS: Final = RunStatus()
"""The runs' status, as the SQLite store keeps it by default."""
