"""``ralph demo``: the pure core driven through a whole run by a simulated world (I/O: files).

The world is scripted so that the run shows the interesting decisions: a retry with backoff, a
fallback to the second agent, a partial iteration, a review that finds issues and their fix.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipeline.events import Budget, Count, DurationMs, Instant, IterationStatus, Ordinal
from pipeline.handlers.simulated import (
    AgentOutcome,
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
)

__all__ = ["DEMO_BUDGET", "demo_world"]

DEMO_BUDGET = Budget(
    max_iterations=Ordinal(3),
    max_review_passes=Count(2),
    max_retries_per_agent=Count(2),
    backoff_base_ms=DurationMs(200),
    backoff_cap_ms=DurationMs(5_000),
    max_consecutive_failures=Ordinal(2),
    max_consecutive_malformed=Ordinal(3),
)
"""The demo's budgets: room for the scripted retries, fallback and review fix."""


def _clock() -> Instant:
    return Instant(datetime.now(UTC))


def demo_world(run_id: str) -> SimulatedWorld:
    """The scripted world of the demo, with a real clock."""
    script: dict[str, list[object]] = {
        # Iteration 1: the developer agent fails once (retried after backoff), then succeeds
        # with partial work; iteration 2: it is missing (fatal), so the chain falls back.
        "developer outcome": [
            AgentOutcome.RETRIABLE_FAILURE,
            AgentOutcome.SUCCESS,
            AgentOutcome.FATAL_FAILURE,
            AgentOutcome.SUCCESS,
        ],
        "iteration status": [IterationStatus.PARTIAL, IterationStatus.COMPLETED],
        "backoff jitter": [137],
        "topics published": [2, 1, 1],
        "review issues": [2, 0],
    }
    config = WorldConfig(DEMO_BUDGET, default_chains(("claude", "codex")), None, run_id)
    return SimulatedWorld(config, ScriptedChooser(script), _clock)


def prepare_directory(directory: Path) -> None:
    """Create ``directory``, refusing one that exists and is not empty."""
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise FileExistsError(f"{directory} exists and is not empty; choose another directory")
    directory.mkdir(parents=True, exist_ok=True)
