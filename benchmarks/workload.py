"""The benchmark workload: long, realistic event logs made by the simulated world."""

from __future__ import annotations

from datetime import timedelta

from pipeline.core.effects import Terminate
from pipeline.core.state import PipelineState
from pipeline.engine.simulation import (
    RandomChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import Budget, Count, DurationMs, Ordinal, PipelineEvent
from pipeline.orchestration import next_effect
from pipeline.reducers import reduce

__all__ = ["LONG_RUN_BUDGET", "NOOP_WEIGHTS", "long_log"]

_ROLES = ("planner", "developer", "reviewer", "committer", "fixer")
_WEIGHTS: dict[str, list[float]] = {
    # success, retriable failure, fatal failure, timeout, provider limited (none: the
    # figures stay comparable with runs measured before limits were simulated)
    **{f"{role} outcome": [0.85, 0.1, 0.0, 0.05, 0.0] for role in _ROLES},
    # completed, partial, failed: mostly partial, so that development goes on and on
    "iteration status": [0.0, 0.97, 0.03],
    "plan usable": [0.95, 0.05],
    "changes to commit": [0.9, 0.1],
    # One malformed events-file line in a hundred: five in a row (which ends a run) never happen.
    "line well formed": [0.99, 0.01],
    # Progress reports only: no cancellation, completion or question ends the long run.
    "a loop-control topic": [1.0, 0.0],
}

NOOP_WEIGHTS: dict[str, list[float]] = {
    # Every agent succeeds, every iteration is partial (so the run goes on), every line is
    # well formed: a loop that does no work and never ends by itself.
    **{f"{role} outcome": [1.0, 0.0, 0.0, 0.0, 0.0] for role in _ROLES},
    "iteration status": [0.0, 1.0, 0.0],
    "plan usable": [1.0, 0.0],
    "changes to commit": [1.0, 0.0],
    "line well formed": [1.0, 0.0],
    "a loop-control topic": [1.0, 0.0],
}
"""Choices for step-overhead benchmarks: the simulated world at its smoothest."""

LONG_RUN_BUDGET = Budget(
    max_iterations=Ordinal(10**7),
    max_review_passes=Count(3),
    max_retries_per_agent=Count(3),
    backoff_base_ms=DurationMs(100),
    backoff_cap_ms=DurationMs(10_000),
    max_consecutive_failures=Ordinal(50),
    max_consecutive_malformed=Ordinal(5),
)
"""Budgets large enough that one simulated run goes on for millions of events."""


def long_log(events: int, seed: int = 7) -> list[PipelineEvent]:
    """The first ``events`` events of simulated runs (one run, unless it ends first)."""
    log: list[PipelineEvent] = []
    run = 0
    while len(log) < events:
        config = WorldConfig(
            budget=LONG_RUN_BUDGET,
            chains=default_chains(("claude", "codex", "gemini")),
            rebase_onto=None,
            run_id=f"bench-{run}",
        )
        chooser = RandomChooser(seed=seed + run, weights=dict(_WEIGHTS))
        world = SimulatedWorld(
            config=config, chooser=chooser, clock=fake_clock(step=timedelta(milliseconds=10))
        )
        state = PipelineState()
        while len(log) < events:
            effect = next_effect(state)
            if isinstance(effect, Terminate):
                break
            for event in world(effect):
                state = reduce(state, event)
                log.append(event)
        run += 1
    return log[:events]
