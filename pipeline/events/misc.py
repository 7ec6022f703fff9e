"""Miscellaneous facts: checkpoints, context clean-up, finalization, loop recovery (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    COUNT_VALIDATOR,
    INSTANT_VALIDATOR,
    CheckpointTrigger,
    Count,
    Instant,
    Sequence,
)

__all__ = [
    "CheckpointSaved",
    "ContextCleaned",
    "FinalizingStarted",
    "LoopRecoveryTriggered",
    "MiscEvent",
    "PromptPermissionsRestored",
]


@final
@frozen
class CheckpointSaved:
    """A checkpoint covering the first ``sequence`` events was stored (asked for by ``trigger``)."""

    trigger: CheckpointTrigger
    sequence: Sequence = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class ContextCleaned:
    """The agent-facing context files were cleared."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class FinalizingStarted:
    """Finalization began."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class PromptPermissionsRestored:
    """The user's prompt file got its original permissions back."""

    path: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class LoopRecoveryTriggered:
    """A repeating pattern ``detected_loop`` was seen ``count`` times and recovery began."""

    detected_loop: str
    count: Count = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


MiscEvent: TypeAlias = (
    CheckpointSaved
    | ContextCleaned
    | FinalizingStarted
    | PromptPermissionsRestored
    | LoopRecoveryTriggered
)
"""Facts that belong to no phase."""
