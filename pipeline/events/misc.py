"""Miscellaneous facts: checkpoints, context clean-up, finalization, loop recovery (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    COUNT_VALIDATOR,
    INSTANT_VALIDATOR,
    CheckpointTrigger,
    Instant,
    LogPosition,
)

__all__ = [
    "CheckpointSaved",
    "FinalizingStarted",
    "MiscEvent",
    "PromptPermissionsRestored",
]


@final
@frozen(kw_only=True)
class CheckpointSaved:
    """A checkpoint covering the first ``sequence`` events was stored (asked for by ``trigger``)."""

    trigger: CheckpointTrigger
    sequence: LogPosition = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class FinalizingStarted:
    """Finalization began."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class PromptPermissionsRestored:
    """The user's prompt file got its original permissions back."""

    path: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


MiscEvent: TypeAlias = CheckpointSaved | FinalizingStarted | PromptPermissionsRestored
"""Facts that belong to no phase."""
