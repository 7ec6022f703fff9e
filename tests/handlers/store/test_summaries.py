"""The SQLite store's ``run_summaries`` projection is the fold's spend at the run's head, and
its ``run_status`` the fold's status rows and question there, written with the events,
whichever store object appended them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from pipeline.core.effects import Terminate
from pipeline.core.serialization import encode_checkpoint
from pipeline.core.state import PipelineState
from pipeline.engine import load_state
from pipeline.engine.simulation import (
    RandomChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import (
    Budget,
    Count,
    DurationMs,
    Ordinal,
    PipelineEvent,
    RunId,
    UsageReported,
)
from pipeline.handlers.store import SequenceConflictError, SqliteEventStore
from pipeline.handlers.store._summaries import question_part
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from pipeline.reducers.views import status_rows

RUN = RunId("r")

_CHOICES: dict[str, list[float]] = {
    # As the benchmarks' workload: mostly partial iterations, so that the run goes on.
    **{
        f"{role} outcome": [0.85, 0.1, 0.0, 0.05, 0.0]
        for role in ("planner", "developer", "reviewer", "committer", "fixer")
    },
    "iteration status": [0.0, 0.97, 0.03],
    "plan usable": [0.95, 0.05],
    "changes to commit": [0.9, 0.1],
    "line well formed": [0.99, 0.01],
    "a loop-control topic": [1.0, 0.0],
}


def _simulated_log(events: int) -> list[PipelineEvent]:
    """The first ``events`` events of a simulated run, usage facts among them."""
    budget = Budget(
        max_iterations=Ordinal(1000),
        max_review_passes=Count(3),
        max_retries_per_agent=Count(3),
        backoff_base_ms=DurationMs(100),
        backoff_cap_ms=DurationMs(10_000),
        max_consecutive_failures=Ordinal(50),
        max_consecutive_malformed=Ordinal(5),
    )
    config = WorldConfig(
        budget=budget, chains=default_chains(("claude", "codex")), rebase_onto=None, run_id="s"
    )
    world = SimulatedWorld(
        config=config, chooser=RandomChooser(seed=3, weights=dict(_CHOICES)), clock=fake_clock()
    )
    state, log = PipelineState(), []
    while len(log) < events:
        effect = next_effect(state)
        if isinstance(effect, Terminate):
            break
        for event in world(effect):
            state = reduce(state, event)
            log.append(event)
    return log


def _summary(path: Path) -> tuple[int, int, float, int]:
    with sqlite3.connect(path) as db:
        row = db.execute(
            "SELECT sequence, invocations, cost_usd, unknown_cost FROM run_summaries "
            "WHERE run_id = ?",
            (RUN,),
        ).fetchone()
    return int(row[0]), int(row[1]), float(row[2]), int(row[3])


def _status(path: Path) -> dict[str, tuple[int, str]]:
    with sqlite3.connect(path) as db:
        found = db.execute(
            "SELECT part, sequence, text FROM run_status WHERE run_id = ?", (RUN,)
        ).fetchall()
    return {part: (int(sequence), text) for part, sequence, text in found}


def test_the_summary_is_the_folds_spend_after_every_append(tmp_path: Path) -> None:
    """After each append (by one store kept open, by a new store object that must load the
    run's state from a checkpoint and the log, and after an append refused for its
    sequence) the row holds the run's head and ``state.ledger.spend.total`` of the fold,
    and the status its head, the fold's status rows and the question it waits on."""
    log = _simulated_log(300)
    assert len(log) >= 300
    assert sum(isinstance(event, UsageReported) for event in log) > 10
    path = tmp_path / "s.db"
    store = SqliteEventStore(path)
    head = 0
    for start in range(0, len(log), 37):
        chunk = log[start : start + 37]
        if start == 37 * 3:
            # A checkpoint, then a new store object: the state is loaded, not kept.
            store.save_checkpoint(RUN, encode_checkpoint(fold(log[:head])))
            store.close()
            store = SqliteEventStore(path)
        if start == 37 * 5:
            with pytest.raises(SequenceConflictError):
                store.append(RUN, head - 1, chunk)
        head = store.append(RUN, head, chunk)
        folded = fold(log[:head])
        total = folded.ledger.spend.total
        assert _summary(path) == (head, total.invocations, total.cost_usd, total.unknown_cost)
        status = _status(path)
        assert status["state"] == (head, orjson.dumps(status_rows(folded, ())).decode())
        question = folded.ledger.pending_question
        waits = "" if question is None else orjson.dumps(question_part(question)).decode()
        assert status["question"] == (head, waits)
        assert "begun" in status
    state, _ = load_state(store, RUN)
    assert _summary(path)[1:] == (
        state.ledger.spend.total.invocations,
        state.ledger.spend.total.cost_usd,
        state.ledger.spend.total.unknown_cost,
    )
    store.close()
