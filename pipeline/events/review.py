"""Review facts: passes started, issues found or a clean bill, fix attempts (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import (
    COUNT_VALIDATOR,
    INSTANT_VALIDATOR,
    ORDINAL_VALIDATOR,
    Count,
    Instant,
    IterationStatus,
    Ordinal,
)

__all__ = [
    "FixAttemptCompleted",
    "FixAttemptStarted",
    "ReviewClean",
    "ReviewEvent",
    "ReviewIssuesFound",
    "ReviewPassStarted",
]


@final
@frozen(kw_only=True)
class ReviewPassStarted:
    """Review pass ``review_pass`` began."""

    review_pass: Ordinal = field(validator=ORDINAL_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class ReviewIssuesFound:
    """The reviewer found ``count`` issues in pass ``review_pass``."""

    review_pass: Ordinal = field(validator=ORDINAL_VALIDATOR)
    count: Count = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class ReviewClean:
    """The reviewer found nothing to fix in pass ``review_pass``."""

    review_pass: Ordinal = field(validator=ORDINAL_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class FixAttemptStarted:
    """An attempt to fix the issues of review pass ``review_pass`` began."""

    review_pass: Ordinal = field(validator=ORDINAL_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class FixAttemptCompleted:
    """The fix attempt for review pass ``review_pass`` ended as ``status``."""

    review_pass: Ordinal = field(validator=ORDINAL_VALIDATOR)
    status: IterationStatus
    at: Instant = field(validator=INSTANT_VALIDATOR)


ReviewEvent: TypeAlias = (
    ReviewPassStarted | ReviewIssuesFound | ReviewClean | FixAttemptStarted | FixAttemptCompleted
)
"""Facts of the review phase."""
