"""Where a run is: its phase and the step within it (pure data)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

from pipeline.events.values import PromptKind, Role

__all__ = [
    "AGENT_OF_PHASE",
    "TERMINAL_PHASES",
    "Phase",
    "Step",
    "agent_of",
]


@enum.unique
class Phase(enum.StrEnum):
    """The phase of a run; ``COMPLETE`` and ``INTERRUPTED`` are terminal."""

    NOT_STARTED = "not_started"
    PLANNING = "planning"
    DEVELOPMENT = "development"
    REVIEW = "review"
    COMMIT_MESSAGE = "commit_message"
    FINAL_VALIDATION = "final_validation"
    FINALIZING = "finalizing"
    AWAITING_DEV_FIX = "awaiting_dev_fix"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"


@enum.unique
class Step(enum.StrEnum):
    """What the current phase waits for next."""

    BEGIN = "begin"
    """The phase (or review fix) has not recorded its start yet."""
    PROMPT = "prompt"
    """The agent's prompt must be materialised."""
    INVOKE = "invoke"
    """The agent must be invoked (again, after a retriable failure)."""
    COMMIT = "commit"
    """The commit must be created with the generated message."""
    REBASE = "rebase"
    """The branch must be rebased onto the configured branch."""
    ABORT_REBASE = "abort_rebase"
    """A conflicted rebase must be aborted."""
    GATE = "gate"
    """The gates of the round under way must run (``PipelineState.gating``)."""
    VALIDATE = "validate"
    """The final checks must run."""
    RESTORE = "restore"
    """The prompt file's permissions must be restored."""
    COMPLETE = "complete"
    """The run's completion must be recorded."""
    TRIGGER = "trigger"
    """Dev-fix must be triggered."""
    MARKER = "marker"
    """The completion marker must be written."""
    DONE = "done"
    """Nothing is left to do in this phase."""


TERMINAL_PHASES = frozenset({Phase.COMPLETE, Phase.INTERRUPTED})
"""Phases in which the run has stopped (``INTERRUPTED`` may be resumed)."""


AGENT_OF_PHASE: Mapping[tuple[Phase, bool], tuple[Role, PromptKind]] = MappingProxyType(
    {
        (Phase.PLANNING, False): (Role.PLANNER, PromptKind.PLANNING),
        (Phase.DEVELOPMENT, False): (Role.DEVELOPER, PromptKind.DEVELOPMENT),
        (Phase.REVIEW, False): (Role.REVIEWER, PromptKind.REVIEW),
        (Phase.REVIEW, True): (Role.DEVELOPER, PromptKind.REVIEW_FIX),
        (Phase.COMMIT_MESSAGE, False): (Role.COMMITTER, PromptKind.COMMIT_MESSAGE),
        (Phase.AWAITING_DEV_FIX, False): (Role.FIXER, PromptKind.DEV_FIX),
    }
)
"""Which agent works in a phase, and with which prompt: ``(phase, fixing)`` to ``(role, prompt
kind)``. ``fixing`` is the review fix: the developer answers the reviewer's findings. Only
review has a fixing side; a phase not listed has no agent."""


def agent_of(phase: Phase, fixing: bool) -> tuple[Role, PromptKind] | None:
    """The role whose agent works in ``phase`` (``fixing``: the review fix) and the prompt it
    gets, or ``None`` where no agent works."""
    return AGENT_OF_PHASE.get((phase, fixing and phase is Phase.REVIEW))
