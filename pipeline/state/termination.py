"""Why a run ended, with the stable string and exit code of each reason (pure data)."""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from typing import Final

__all__ = ["EXIT_CODES", "TerminationReason"]


@enum.unique
class TerminationReason(enum.StrEnum):
    """Why a run stopped; ``value`` is the stable string shown to people and stored in the log."""

    COMPLETED = "completed"
    MAX_ITERATIONS = "max_iterations"
    MAX_RUNTIME = "max_runtime"
    MAX_COST = "max_cost"
    CONSECUTIVE_FAILURES = "consecutive_failures"
    AGENT_CHAIN_EXHAUSTED = "agent_chain_exhausted"
    LOOP_STALE = "loop_stale"
    LOOP_THRASHING = "loop_thrashing"
    VALIDATION_FAILURE = "validation_failure"
    WORKSPACE_ERROR = "workspace_error"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    HUMAN_INTERVENTION_REQUIRED = "human_intervention_required"

    @property
    def exit_code(self) -> int:
        """The process exit status ``ralph`` ends with for this reason."""
        return EXIT_CODES[self]

    @property
    def is_success(self) -> bool:
        """Whether the run did what it was asked (``cancelled`` exits 0 but is no success)."""
        return self is TerminationReason.COMPLETED


EXIT_CODES: Final[Mapping[TerminationReason, int]] = types.MappingProxyType(
    {
        TerminationReason.COMPLETED: 0,
        TerminationReason.MAX_ITERATIONS: 2,
        TerminationReason.MAX_RUNTIME: 2,
        TerminationReason.MAX_COST: 2,
        TerminationReason.CONSECUTIVE_FAILURES: 1,
        TerminationReason.AGENT_CHAIN_EXHAUSTED: 1,
        TerminationReason.LOOP_STALE: 1,
        TerminationReason.LOOP_THRASHING: 1,
        TerminationReason.VALIDATION_FAILURE: 1,
        TerminationReason.WORKSPACE_ERROR: 1,
        TerminationReason.STOPPED: 1,
        TerminationReason.INTERRUPTED: 130,
        TerminationReason.CANCELLED: 0,
        TerminationReason.HUMAN_INTERVENTION_REQUIRED: 3,
    }
)
"""The exit code of every termination reason (documented in docs/architecture/termination.md)."""
