"""Final validation facts: the gates that ran on the finished work, and whether it passed or
failed its final check (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen
from attrs.validators import optional

from pipeline.events.screen import ScreenHit, ScreenScope
from pipeline.events.values import (
    COUNT_VALIDATOR,
    EXIT_CODE_VALIDATOR,
    INSTANT_VALIDATOR,
    Count,
    Digest,
    DurationMs,
    ExitCode,
    GateBoundary,
    GateStatus,
    Instant,
)

__all__ = [
    "ChangesScreened",
    "FinalValidationFailed",
    "FinalValidationPassed",
    "GateFinished",
    "GateStarted",
    "ScreenBaseRecorded",
    "ValidationEvent",
]


@final
@frozen(kw_only=True)
class FinalValidationPassed:
    """The final checks passed."""

    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class FinalValidationFailed:
    """The final checks failed (``reason`` says which and how)."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class GateStarted:
    """ralph started the command of gate ``gate`` at ``boundary`` (recorded before its process
    starts, so a crash leaves a trace of it)."""

    gate: str
    boundary: GateBoundary
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class GateFinished:
    """Gate ``gate``'s command ``argv`` ended ``status`` (its exit code when it exited), after
    ``duration_ms``; its whole output is at ``log_path`` (digest ``output_digest``), and
    ``tail`` is its end, as the agent is shown it. ``pinned`` is the commit its checks were
    pinned to (None: it ran on the work tree as it was), ``restored`` the files whose
    agent's version it did not use (put back as the base has them, or left out)."""

    gate: str
    boundary: GateBoundary
    argv: tuple[str, ...]
    status: GateStatus
    exit_code: ExitCode | None = field(validator=optional(EXIT_CODE_VALIDATOR))
    duration_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    output_digest: Digest
    log_path: str
    tail: str
    pinned: str | None = None
    restored: tuple[str, ...] = ()
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class ScreenBaseRecorded:
    """The run's changes are screened from commit ``sha`` (None: the repository had no commit
    yet, so from the empty tree): recorded when the run starts, and again after a rebase."""

    sha: str | None
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class ChangesScreened:
    """ralph screened the change from ``base`` (None: the empty tree) to the work tree, ``files``
    changed paths, and found ``hits`` (none: the change is clean)."""

    scope: ScreenScope
    base: str | None
    files: Count = field(validator=COUNT_VALIDATOR)
    hits: tuple[ScreenHit, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


ValidationEvent: TypeAlias = (
    FinalValidationPassed
    | FinalValidationFailed
    | GateStarted
    | GateFinished
    | ScreenBaseRecorded
    | ChangesScreened
)
"""Facts of the final validation phase."""
