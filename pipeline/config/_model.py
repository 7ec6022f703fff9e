"""The configuration of a run, as frozen classes (pure data).

Read from ``ralph.toml`` by :func:`pipeline.config.parse_config`. Field defaults are the
defaults a user gets; ``docs/architecture/configuration.md`` describes every key.
"""

from __future__ import annotations

import enum
from typing import final

from attrs import field, frozen

from pipeline.events import Budget, Count, DurationMs, Ordinal, Role

__all__ = ["AgentConfig", "BudgetConfig", "ChainConfig", "PromptVia", "RalphConfig"]


@enum.unique
class PromptVia(enum.StrEnum):
    """How an agent receives its prompt."""

    STDIN = "stdin"
    ARGUMENT = "argument"
    FILE = "file"


@final
@frozen(kw_only=True)
class BudgetConfig:
    """``[budgets]``: the limits a run works within."""

    max_iterations: int = 5
    max_review_passes: int = 2
    max_retries_per_agent: int = 2
    backoff_base_ms: int = 1_000
    backoff_cap_ms: int = 60_000
    max_consecutive_failures: int = 3
    max_consecutive_malformed: int = 3
    max_runtime_s: int | None = None

    def to_budget(self) -> Budget:
        """The ``Budget`` a run records in ``RunStarted`` (raises ValueError when out of range)."""
        return Budget(
            max_iterations=Ordinal(self.max_iterations),
            max_review_passes=Count(self.max_review_passes),
            max_retries_per_agent=Count(self.max_retries_per_agent),
            backoff_base_ms=DurationMs(self.backoff_base_ms),
            backoff_cap_ms=DurationMs(self.backoff_cap_ms),
            max_consecutive_failures=Ordinal(self.max_consecutive_failures),
            max_consecutive_malformed=Ordinal(self.max_consecutive_malformed),
        )


@final
@frozen(kw_only=True)
class AgentConfig:
    """``[agents.NAME]``: one agent backend, given as a preset or as a command."""

    preset: str | None = None
    command: tuple[str, ...] | None = None
    model: str | None = None
    prompt_via: PromptVia = PromptVia.STDIN
    timeout_s: int = 3_600
    inactivity_timeout_s: int = 600
    args: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class ChainConfig:
    """``[chains]``: for each role, the agents it falls back through, preferred first."""

    planner: tuple[str, ...] = field(factory=tuple)
    developer: tuple[str, ...] = field(factory=tuple)
    reviewer: tuple[str, ...] = field(factory=tuple)
    committer: tuple[str, ...] = field(factory=tuple)
    fixer: tuple[str, ...] = field(factory=tuple)

    def for_role(self, role: Role) -> tuple[str, ...]:
        """The chain of ``role``."""
        chain: tuple[str, ...] = getattr(self, role.value)
        return chain


@final
@frozen(kw_only=True)
class RalphConfig:
    """The whole ``ralph.toml``."""

    prompt_file: str = "PROMPT.md"
    rebase_onto: str | None = None
    budgets: BudgetConfig = BudgetConfig()
    agents: dict[str, AgentConfig] = field(factory=dict)
    chains: ChainConfig = ChainConfig()
