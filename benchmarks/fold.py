"""The fold benchmark: events per second through ``reduce`` against the hand-written floors."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.baselines import dict_fold, evolve_fold
from benchmarks.workload import long_log
from pipeline.events import PipelineEvent
from pipeline.reducers import fold

__all__ = ["run_fold_benchmark"]


def _median_rate(
    work: Callable[[Sequence[PipelineEvent]], Any], log: Sequence[PipelineEvent], repeats: int
) -> tuple[float, list[float]]:
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        work(log)
        rates.append(len(log) / (time.perf_counter() - start))
    return statistics.median(rates), rates


def run_fold_benchmark(events: int, repeats: int) -> dict[str, Any]:
    """Fold ``events`` events ``repeats`` times with each contender, alternating; medians."""
    started = time.perf_counter()
    log = long_log(events)
    generated_in = time.perf_counter() - started
    contenders: dict[str, Callable[[Sequence[PipelineEvent]], Any]] = {
        "ralph reduce (frozen attrs, checked transitions)": fold,
        "floor: match + attrs.evolve, flat frozen state": evolve_fold,
        "floor: mutable dict": dict_fold,
    }
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(repeats):  # alternate, so that drift hits every contender alike
        for name, work in contenders.items():
            _, rates = _median_rate(work, log, 1)
            samples[name].extend(rates)
    medians = {name: statistics.median(rates) for name, rates in samples.items()}
    ours = medians["ralph reduce (frozen attrs, checked transitions)"]
    final = fold(log)
    return {
        "events": len(log),
        "repeats": repeats,
        "log_generated_in_s": round(generated_in, 2),
        "anomalies_in_fold": final.ledger.anomalies,
        "events_per_second": {name: round(rate) for name, rate in medians.items()},
        "samples": {name: [round(r) for r in rates] for name, rates in samples.items()},
        "ratio_to_evolve_floor": round(
            ours / medians["floor: match + attrs.evolve, flat frozen state"], 3
        ),
        "ratio_to_dict_floor": round(ours / medians["floor: mutable dict"], 3),
        "goal_events_per_second": 500_000,
        "goal_met": ours >= 500_000,
        "within_1_5x_of_evolve_floor": ours * 1.5
        >= medians["floor: match + attrs.evolve, flat frozen state"],
    }
