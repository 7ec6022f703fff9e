"""Final validation facts: the gates that ran on the finished work, and whether it passed or
failed its final check (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen
from attrs.validators import optional

from pipeline.events.values import (
    COUNT_VALIDATOR,
    EXIT_CODE_VALIDATOR,
    INSTANT_VALIDATOR,
    Digest,
    DurationMs,
    ExitCode,
    GateBoundary,
    GateStatus,
    Instant,
)

__all__ = [
    "FinalValidationFailed",
    "FinalValidationPassed",
    "GateFinished",
    "GateStarted",
    "ValidationEvent",
]


@final
@frozen
class FinalValidationPassed:
    """The final checks passed."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class FinalValidationFailed:
    """The final checks failed (``reason`` says which and how)."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class GateStarted:
    """ralph started the command of gate ``gate`` at ``boundary`` (recorded before its process
    starts, so a crash leaves a trace of it)."""

    gate: str
    boundary: GateBoundary
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen
class GateFinished:
    """Gate ``gate``'s command ``argv`` ended ``status`` (its exit code when it exited), after
    ``duration_ms``; its whole output is at ``log_path`` (digest ``output_digest``), and
    ``tail`` is its end, as the agent is shown it."""

    gate: str
    boundary: GateBoundary
    argv: tuple[str, ...]
    status: GateStatus
    exit_code: ExitCode | None = field(validator=optional(EXIT_CODE_VALIDATOR))
    duration_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    output_digest: Digest
    log_path: str
    tail: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


ValidationEvent: TypeAlias = (
    FinalValidationPassed | FinalValidationFailed | GateStarted | GateFinished
)
"""Facts of the final validation phase."""
