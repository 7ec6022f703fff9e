"""Kill -9 a real run at seeded random points, resume each time: no fact lost or doubled."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import pytest

from pipeline.core.state import PipelineState, is_complete
from pipeline.engine import RunOptions, run_durable
from pipeline.events import (
    CheckpointSaved,
    DevelopmentIterationStarted,
    FinalizingStarted,
    FixAttemptStarted,
    LogPosition,
    PipelineEvent,
    PlanningStarted,
    PromptMaterialized,
    ReviewPassStarted,
    RunId,
    RunResumed,
)
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold
from tests.engine.crash_world import CrashWorld, clock

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261122


def _facts(log: list[PipelineEvent]) -> list[PipelineEvent]:
    """The log without resumption marks, checkpoint positions blanked (they move by design)."""
    return [
        attrs.evolve(e, sequence=LogPosition(0)) if isinstance(e, CheckpointSaved) else e
        for e in log
        if not isinstance(e, RunResumed)
    ]


def _comparable(state: PipelineState) -> PipelineState:
    """The state without what resumption changes by design: positions and the resume count."""
    return attrs.evolve(
        state,
        sequence=0,
        checkpoints=attrs.evolve(state.checkpoints, last_sequence=None),
        ledger=attrs.evolve(state.ledger, resumes=0, last_resume_sequence=None),
    )


def _start(db: Path, delay: float, run_id: str | None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.engine.crash_worker", str(db), str(SEED), str(delay)]
    return subprocess.Popen(
        [*args, *([run_id] if run_id else [])],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


@pytest.mark.slow
def test_a_run_killed_at_twenty_random_points_ends_as_an_uninterrupted_one(
    tmp_path: Path,
) -> None:
    """SIGKILL at >= 20 points (some mid-append); the resumed log equals a clean run's."""
    reference_db = tmp_path / "reference.db"
    with SqliteEventStore(reference_db, synchronous="OFF") as store:
        reference = run_durable(store, CrashWorld(SEED, 0.0), options=RunOptions(clock=clock))
        reference_log = list(store.read(reference.run_id))
    assert len(reference_log) > 300

    db = tmp_path / "crashed.db"
    rng = random.Random(SEED)
    run_id: str | None = None
    kills = 0
    while True:
        # A third of the workers spend their time appending, the rest in the handler too.
        delay = rng.choice([0.0, 0.004, 0.008])
        worker = _start(db, delay, run_id)
        assert worker.stdout is not None
        assert worker.stdout.readline().strip() == "ready"
        second = worker.stdout.readline().strip()
        if second.startswith("done"):
            # The last kill came after the run's last fact: nothing was left to resume.
            assert worker.wait(timeout=30) == 0
            kills -= 1
            break
        if second != "running":
            _out, err = worker.communicate(timeout=30)
            raise AssertionError(f"the worker died before its run: {err}")
        # Short enough that the run (faster since redoable facts are not synced) needs many.
        kill_after = rng.uniform(0.002, 0.03)
        time.sleep(kill_after)
        if worker.poll() is None and kills < 40:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)
            kills += 1
        else:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            if out.strip().startswith("done"):
                break
        if run_id is None:
            with SqliteEventStore(db) as store:
                runs = store.runs()
            run_id = runs[0].run_id if runs else None
        if kills >= 20 and run_id is not None:
            # Enough kill points: let it finish.
            worker = _start(db, 0.0, run_id)
            out, err = worker.communicate(timeout=300)
            assert worker.returncode == 0, err
            break
    assert kills >= 20

    with SqliteEventStore(db) as store:
        log = list(store.read(RunId(run_id or "")))
        state = run_durable(
            store,
            CrashWorld(SEED, 0.0),
            run_id=RunId(run_id or ""),
            options=RunOptions(clock=clock),
        ).state
    assert is_complete(state)
    assert fold(log) == state
    assert _facts(log) == _facts(reference_log)
    assert _comparable(state) == _comparable(reference.state)
    resumes = sum(isinstance(e, RunResumed) for e in log)
    # Every kill hit a process with its run under way, so each was followed by one resumption.
    assert resumes == kills
    assert state.ledger.resumes == resumes


@pytest.mark.slow
def test_a_kill_inside_an_append_transaction_loses_the_batch_whole(tmp_path: Path) -> None:
    """Killed after its rows were inserted but before COMMIT: none of the batch is in the log,
    and resuming produces the same facts as an uninterrupted run."""
    with SqliteEventStore(tmp_path / "reference.db", synchronous="OFF") as store:
        reference = run_durable(store, CrashWorld(SEED, 0.0), options=RunOptions(clock=clock))
        reference_log = list(store.read(reference.run_id))
    db = tmp_path / "crashed.db"
    args = [sys.executable, "-m", "tests.engine.crash_worker", str(db), str(SEED), "0"]
    worker = subprocess.Popen(
        args,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "CRASH_STALL_COMMIT": "40"},
        start_new_session=True,
    )
    assert worker.stdout is not None
    lines = [worker.stdout.readline().strip() for _ in range(3)]
    assert lines == ["ready", "running", "in-transaction"]
    with SqliteEventStore(db) as store:
        (run,) = store.runs()
        head_before_kill = store.head(run.run_id)
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    with SqliteEventStore(db) as store:
        assert store.head(run.run_id) == head_before_kill
        assert list(store.read(run.run_id)) == reference_log[:head_before_kill]
        world = CrashWorld(SEED, 0.0)
        final = run_durable(store, world, run_id=run.run_id, options=RunOptions(clock=clock))
        log = list(store.read(run.run_id))
    assert _facts(log) == _facts(reference_log)
    assert _comparable(final.state) == _comparable(reference.state)


class _RecordingStore(SqliteEventStore):
    """A real SQLite store that also remembers, per append, the head it left and whether it
    was flushed: what a power cut right after each append could take."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, synchronous="OFF")
        self.appends: list[tuple[int, bool]] = []

    def append(self, *args: Any, **kwargs: Any) -> int:
        head = super().append(*args, **kwargs)
        self.appends.append((head, kwargs.get("flush", True)))
        return head


def test_a_power_cut_losing_every_unflushed_fact_is_redone_to_the_same_end(
    tmp_path: Path,
) -> None:
    """Cut the power after any append: the disk holds the log up to the last flushed append
    (the worst case). Only redoable effects' facts are lost, and resuming from what is left
    records the same facts as the uninterrupted run."""
    store = _RecordingStore(tmp_path / "reference.db")
    with store:
        reference = run_durable(store, CrashWorld(SEED, 0.0), options=RunOptions(clock=clock))
        reference_log = list(store.read(reference.run_id))
    flushed_heads = [0]
    cuts: list[tuple[int, int]] = []  # (what the disk keeps, what the process had written)
    for head, flushed in store.appends:
        if flushed:
            flushed_heads.append(head)
        else:
            cuts.append((flushed_heads[-1], head))
    assert len(cuts) > 50, "the run should have many unflushed appends"
    lost_kinds = {type(e) for kept, written in cuts for e in reference_log[kept:written]}
    assert lost_kinds <= {
        CheckpointSaved,
        PlanningStarted,
        DevelopmentIterationStarted,
        ReviewPassStarted,
        FixAttemptStarted,
        FinalizingStarted,
        PromptMaterialized,
    }, "a fact a handler acted on outside the store must never be lost"
    for kept, _written in random.Random(SEED).sample(cuts, 6):
        with SqliteEventStore(tmp_path / f"cut-{kept}.db", synchronous="OFF") as cut:
            cut.append(reference.run_id, 0, reference_log[:kept])
            final = run_durable(
                cut, CrashWorld(SEED, 0.0), run_id=reference.run_id, options=RunOptions(clock=clock)
            )
            log = list(cut.read(reference.run_id))
        assert _facts(log) == _facts(reference_log)
        assert _comparable(final.state) == _comparable(reference.state)
