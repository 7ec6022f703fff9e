"""Serialization: events and states round-tripped through the cattrs converter, next to bare
orjson on the equivalent plain dicts (the floor: no classes, no validation, no tags to check).

Both sides alternate, ``repeats`` times; medians of round trips per second.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import orjson

from benchmarks.workload import long_log
from pipeline.core.serialization import (
    decode_event,
    decode_state,
    encode_event,
    encode_state,
    unstructure_event,
)
from pipeline.core.state import PipelineState
from pipeline.reducers import fold

__all__ = ["run_serialization_benchmark"]


def _rate(work: Any, items: int) -> float:
    start = time.perf_counter()
    work()
    return items / (time.perf_counter() - start)


def run_serialization_benchmark(events: int, repeats: int) -> dict[str, Any]:
    """Round trips per second for events and for states, ours and the bare-orjson floor."""
    log = long_log(events)
    plain = [unstructure_event(e) for e in log]
    states: list[PipelineState] = [fold(log[: len(log) * k // 10]) for k in range(1, 11)]
    plain_states = [orjson.loads(encode_state(s)) for s in states]
    state_rounds = max(1, events // 100)

    def ours_events() -> None:
        for event in log:
            decode_event(encode_event(event))

    def floor_events() -> None:
        for data in plain:
            orjson.loads(orjson.dumps(data))

    def ours_states() -> None:
        for i in range(state_rounds):
            decode_state(encode_state(states[i % len(states)]))

    def floor_states() -> None:
        for i in range(state_rounds):
            orjson.loads(orjson.dumps(plain_states[i % len(plain_states)]))

    samples: dict[str, list[float]] = {k: [] for k in ("ours_e", "floor_e", "ours_s", "floor_s")}
    for _ in range(repeats):
        samples["ours_e"].append(_rate(ours_events, len(log)))
        samples["floor_e"].append(_rate(floor_events, len(log)))
        samples["ours_s"].append(_rate(ours_states, state_rounds))
        samples["floor_s"].append(_rate(floor_states, state_rounds))
    median = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "events": len(log),
        "state_round_trips": state_rounds,
        "repeats": repeats,
        "round_trips_per_second": {
            "events, cattrs + orjson": round(median["ours_e"]),
            "events, floor: orjson on dicts": round(median["floor_e"]),
            "states, cattrs + orjson": round(median["ours_s"]),
            "states, floor: orjson on dicts": round(median["floor_s"]),
        },
        "ratio_events": round(median["ours_e"] / median["floor_e"], 3),
        "ratio_states": round(median["ours_s"] / median["floor_s"], 3),
    }
