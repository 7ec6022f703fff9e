"""The events-file reader against a bare ``orjson.loads`` loop, and its peak memory.

The file is what agents write with ``ralph emit``: mostly text payloads, some JSON objects,
one line in a hundred malformed. Both sides read the same file in the same process,
alternating, and the medians are reported. Peak memory is measured with ``tracemalloc`` on two
files ten times apart in size: a streaming reader's peak does not grow with the file.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from pipeline.handlers.intake import EventsFileReader

__all__ = ["run_reader_benchmark", "write_events_file"]

GOAL_RATIO = 0.7
"""The reader's goal: at least this fraction of the bare loop's lines per second."""


def write_events_file(path: Path, lines: int) -> int:
    """Write ``lines`` lines as agents would; returns the file's size in bytes."""
    start = datetime(2026, 11, 1, tzinfo=UTC)
    topics = ("build.progress", "test.result", "review.note", "plan.step")
    with path.open("wb") as handle:
        batch: list[bytes] = []
        for n in range(lines):
            if n % 100 == 99:
                batch.append(b'{"topic": "build.progress", "payload": "half a li\n')
                continue
            ts = (start + timedelta(milliseconds=n)).isoformat().replace("+00:00", "Z")
            payload: Any = f"step {n} done" if n % 4 else {"passed": n % 50, "failed": []}
            batch.append(orjson.dumps({"topic": topics[n % 4], "payload": payload, "ts": ts}))
            batch.append(b"\n")
            if len(batch) > 20_000:
                handle.write(b"".join(batch))
                batch.clear()
        handle.write(b"".join(batch))
    return path.stat().st_size


def _bare_loop(path: Path) -> int:
    """The floor: every line through ``orjson.loads``, nothing else."""
    count = 0
    with path.open("rb") as handle:
        for line in handle:
            # try/except, not contextlib.suppress: the floor must not pay for a context manager.
            try:  # noqa: SIM105
                orjson.loads(line)
            except orjson.JSONDecodeError:
                pass
            count += 1
    return count


def _reader(path: Path) -> int:
    """The engine's reader: every line checked into a topic record or a malformed record."""
    count = 0
    for _record in EventsFileReader(path=path).read():
        count += 1
    return count


def _timed(work: Callable[[Path], int], path: Path) -> float:
    gc.collect()
    started = time.perf_counter()
    work(path)
    return time.perf_counter() - started


def _peak_bytes(path: Path) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        _reader(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_reader_benchmark(lines: int, repeats: int) -> dict[str, Any]:
    """Lines per second of the reader and of the bare loop (medians), and peak memory."""
    with tempfile.TemporaryDirectory(prefix="ralph-reader-bench-") as folder:
        big = Path(folder) / "events.jsonl"
        size = write_events_file(big, lines)
        samples: dict[str, list[float]] = {"bare orjson.loads loop": [], "EventsFileReader": []}
        for _ in range(repeats):
            samples["bare orjson.loads loop"].append(lines / _timed(_bare_loop, big))
            samples["EventsFileReader"].append(lines / _timed(_reader, big))
        rates = {name: round(statistics.median(values)) for name, values in samples.items()}
        small = Path(folder) / "small.jsonl"
        write_events_file(small, max(1, lines // 10))
        peak_small, peak_big = _peak_bytes(small), _peak_bytes(big)
    ratio = rates["EventsFileReader"] / rates["bare orjson.loads loop"]
    return {
        "lines": lines,
        "file_bytes": size,
        "repeats": repeats,
        "lines_per_second": rates,
        "ratio_to_bare_loop": round(ratio, 2),
        "goal_ratio": GOAL_RATIO,
        "goal_met": ratio >= GOAL_RATIO,
        "peak_bytes": {"tenth of the file": peak_small, "whole file": peak_big},
        # Streaming: ten times the file may not cost more than a little extra peak memory.
        "peak_flat": peak_big <= 1.5 * peak_small + (1 << 20),
    }
