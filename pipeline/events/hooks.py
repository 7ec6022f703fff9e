"""Hook facts: a lifecycle hook's command ran (pure data).

What the failure did is the reducer's to decide from the run's policy (``HookSpec.on_error``):
the fact says only how the command ended.
"""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen
from attrs.validators import optional

from pipeline.events._validators import EXIT_CODE_VALIDATOR
from pipeline.events.hook_policy import HookPoint
from pipeline.events.values import (
    COUNT_VALIDATOR,
    INSTANT_VALIDATOR,
    DurationMs,
    ExitCode,
    GateStatus,
    Instant,
)

__all__ = ["HookEvent", "HookRan"]


@final
@frozen(kw_only=True)
class HookRan:
    """Hook ``hook`` of ``point`` ran ``argv``, which ended ``status`` (its exit code when it
    exited) after ``duration_ms``; ``tail`` is the end of its output."""

    hook: str
    point: HookPoint
    argv: tuple[str, ...]
    status: GateStatus
    exit_code: ExitCode | None = field(validator=optional(EXIT_CODE_VALIDATOR))
    duration_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    tail: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


HookEvent: TypeAlias = HookRan
"""The hook category (one fact)."""
