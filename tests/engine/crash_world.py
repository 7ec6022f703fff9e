"""A simulated world whose choices depend only on what is asked, not on when.

Each choice is drawn from a generator seeded with the run's seed, the effect's content (its
id left out: ids move when a resume adds ``RunResumed``) and the question. A process killed
and resumed therefore meets the same world as one that was never interrupted.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import attrs

from pipeline.core.effects import CreateCommit, Effect, EffectId
from pipeline.engine.simulation import SimulatedWorld, WorldConfig, default_chains, fake_clock
from pipeline.events import (
    Budget,
    Count,
    DurationMs,
    Instant,
    LoopPolicy,
    Ordinal,
    PipelineEvent,
)

T = TypeVar("T")
START = Instant(datetime(2026, 7, 1, tzinfo=UTC))
CRASH_BUDGET = Budget(
    max_iterations=Ordinal(40),
    max_review_passes=Count(3),
    max_retries_per_agent=Count(3),
    backoff_base_ms=DurationMs(1),
    backoff_cap_ms=DurationMs(8),
    max_consecutive_failures=Ordinal(40),
    max_consecutive_malformed=Ordinal(5),
)


class KeyedChooser:
    """Choices seeded by (seed, current effect, question, how often asked in this effect)."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.key = ""
        self._asked: dict[str, int] = {}

    def start(self, key: str) -> None:
        """Begin answering for the effect identified by ``key``."""
        self.key = key
        self._asked = {}

    def _random(self, what: str) -> random.Random:
        count = self._asked.get(what, 0)
        self._asked[what] = count + 1
        return random.Random(f"{self.seed}|{self.key}|{what}|{count}")

    def pick(self, options: Sequence[T], what: str) -> T:
        """Mostly the happy option; sometimes another, always the same for the same question."""
        generator = self._random(what)
        if what == "iteration status":
            return options[1]  # always partial: a long run, up to the iteration budget
        if what == "limit reset":
            return options[1]  # soon: a limit is waited out, never a stop for a person
        return options[0] if generator.random() < 0.8 else generator.choice(list(options))

    def number(self, low: int, high: int, what: str) -> int:
        """A number, the same for the same question."""
        return self._random(what).randint(low, high)


class CrashWorld:
    """The keyed simulated world, sleeping ``delay`` seconds per effect."""

    def __init__(self, seed: int, delay: float) -> None:
        self.chooser = KeyedChooser(seed)
        # No loop control: the run must go on to its iteration budget, long enough to be
        # killed at twenty points (a cancellation or a stale loop would end it early).
        config = WorldConfig(
            budget=CRASH_BUDGET,
            chains=default_chains(("claude", "codex")),
            rebase_onto=None,
            run_id=f"crash-{seed}",
            loop=LoopPolicy.off(),
        )
        self.world = SimulatedWorld(
            config=config, chooser=self.chooser, clock=fake_clock(START, timedelta(0))
        )
        self.delay = delay

    def __call__(self, effect: Effect) -> Sequence[PipelineEvent]:
        """Carry out ``effect``; the same effect content always gives the same facts."""
        # The question is the effect without what a resume changes: its id, and whether a
        # commit may already exist (the world answers a re-issued effect as it did before).
        key = attrs.evolve(effect, effect_id=EffectId(""))
        if isinstance(key, CreateCommit):
            key = attrs.evolve(key, may_exist=False)
        self.chooser.start(repr(key))
        if self.delay:
            time.sleep(self.delay)
        return self.world(effect)


def clock() -> Instant:
    """The runner's clock: constant, so that facts from either run compare equal."""
    return START
