"""Durable-loop benchmarks: steps per second, full replay, and resume from a checkpoint.

Each figure stands next to its floor measured in the same run: a bare SQLite insert+commit loop
(for steps) and a bare ``SELECT`` + ``orjson.loads`` loop (for replay).
"""

from __future__ import annotations

import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks.workload import LONG_RUN_BUDGET, NOOP_WEIGHTS, long_log
from pipeline.core.serialization import encode_checkpoint
from pipeline.core.state import PipelineState
from pipeline.engine import RunOptions, load_state, run_durable
from pipeline.engine.simulation import RandomChooser, SimulatedWorld, WorldConfig, default_chains
from pipeline.events import RunId
from pipeline.handlers.store import Folded, SqliteEventStore
from pipeline.reducers import fold

__all__ = ["run_durable_benchmarks"]


def _steps(directory: Path, steps: int) -> dict[str, float]:
    """A run whose handler does no real work, every step committed (the default durability)."""
    config = WorldConfig(
        budget=LONG_RUN_BUDGET, chains=default_chains(("a", "b")), rebase_onto=None, run_id="steps"
    )
    world = SimulatedWorld(config=config, chooser=RandomChooser(seed=1, weights=dict(NOOP_WEIGHTS)))
    with SqliteEventStore(directory / "steps.db") as store:
        start = time.perf_counter()
        run = run_durable(store, world, options=RunOptions(max_effects=steps))
        ours = run.effects / (time.perf_counter() - start)
    if run.effects != steps:
        raise AssertionError(f"the run stopped after {run.effects} of {steps} steps")
    db = sqlite3.connect(directory / "floor.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, body BLOB)")
    payload = b'{"type":"agent.topic_published","topic":"t","payload":"p","line_number":1}'
    start = time.perf_counter()
    for k in range(steps):
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO t VALUES (?, ?)", (k, payload))
        db.execute("COMMIT")
    floor = steps / (time.perf_counter() - start)
    db.close()
    return {"ralph durable steps/s": round(ours), "floor: bare insert+commit/s": round(floor)}


def _replay(directory: Path, sizes: list[int], repeats: int) -> list[dict[str, Any]]:
    """Full replay and resume-from-checkpoint times for growing logs."""
    log = long_log(max(sizes))
    rows = []
    for size in sizes:
        path = directory / f"replay-{size}.db"
        run_id = RunId(f"replay-{size}")
        with SqliteEventStore(path, synchronous="OFF") as store:
            state = PipelineState()
            for start in range(0, size, 5_000):
                # Folded, as the engine appends: the store takes the states, not the log.
                chunk = Folded(state, log[start : min(size, start + 5_000)])
                store.append(run_id, start, chunk)
                state = chunk.after
            full, floor, resume = [], [], []
            for _ in range(repeats):
                began = time.perf_counter()
                state, _ = load_state(store, run_id)
                full.append(time.perf_counter() - began)
                db = sqlite3.connect(path)
                began = time.perf_counter()
                for (body,) in db.execute(
                    "SELECT body FROM events WHERE run_id = ? ORDER BY sequence", (run_id,)
                ):
                    orjson.loads(body)
                floor.append(time.perf_counter() - began)
                db.close()
            # A checkpoint 100 events before the end, as a run that checkpoints as it goes has.
            store.save_checkpoint(run_id, encode_checkpoint(fold(log[: size - 100])))
            load_state(store, run_id)  # warm the page cache, as a resuming process finds it
            for _ in range(max(repeats, 5)):
                began = time.perf_counter()
                resumed, used = load_state(store, run_id)
                resume.append(time.perf_counter() - began)
            assert resumed == state
            assert used == size - 100
        rows.append(
            {
                "events": size,
                "full_replay_s": round(statistics.median(full), 3),
                "floor_read_and_loads_s": round(statistics.median(floor), 3),
                "resume_from_checkpoint_ms": round(statistics.median(resume) * 1000, 1),
                "replay_peak_rss_growth_mb": _replay_rss_growth(path, run_id),
                "store_mb": round(path.stat().st_size / 2**20, 1),
            }
        )
    return rows


_RSS_PROBE = """
import sys
from pipeline.events import RunId
from pipeline.handlers.store import SqliteEventStore
from pipeline.reducers import fold

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

with SqliteEventStore(sys.argv[1]) as store:
    run = RunId(sys.argv[2])
    fold(store.read(run, store.head(run) - 10))  # warm every code path on a short tail
    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # the peak RSS starts again from the current RSS
    fold(store.read(run))  # the whole history, as a resume with no checkpoint replays it
    after = status("VmHWM")
print(before, after)
"""


def _replay_rss_growth(path: Path, run_id: RunId) -> float:
    """How much a fresh process's peak RSS grows while it replays the whole log (MiB): the
    peak (``VmHWM``, reset just before) less the resident size before the replay."""
    result = subprocess.run(
        [sys.executable, "-c", _RSS_PROBE, str(path), run_id],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    before, after = (int(v) for v in result.stdout.split())
    return round((after - before) / 1024, 1)  # /proc reports KiB


def run_durable_benchmarks(quick: bool, largest: int | None = None) -> dict[str, Any]:
    """All durable-loop figures: logs of 10^4 to 10^6 events (10^5 with ``quick``), or up to
    ``largest`` events when given."""
    sizes = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    if largest is not None:
        sizes = [max(200, largest // 10), max(1_000, largest)]
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        steps = _steps(directory, 300 if quick else 3_000)
        replay = _replay(directory, sizes, 1 if quick else 3)
    resumes = [row["resume_from_checkpoint_ms"] for row in replay]
    largest_row = replay[-1]
    return {
        "replay_memory_flat": largest_row["replay_peak_rss_growth_mb"]
        < max(50.0, largest_row["store_mb"] / 4),
        "steps": steps,
        "replay": replay,
        "resume_flat_within_20_percent": max(resumes) <= 1.2 * min(resumes) + 1.0,
        "full_replay_1e6_under_3s": next(
            (row["full_replay_s"] < 3 for row in replay if row["events"] == 1_000_000), None
        ),
    }
