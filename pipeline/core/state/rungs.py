"""A hat's place on its escalation ladder, and the kinds of bounce that move it (pure data)."""

from __future__ import annotations

import enum
from typing import assert_never, final

from attrs import frozen

__all__ = ["Bounce", "Rung"]


@enum.unique
class Bounce(enum.StrEnum):
    """A kind of bounce: the hat's work came back to it (named as in ``escalate_after``)."""

    REVIEW_ISSUES = "review_issues"
    """The reviewer found issues (in a topology: the hat woken by one of its review topics)."""
    BLOCKED = "blocked"
    """The hat reported its task blocked."""
    VALIDATION_FAILED = "validation_failed"
    """A gate blocked the hat's work, or the final check failed."""


@final
@frozen(kw_only=True)
class Rung:
    """Hat ``hat``'s place on its ladder (0: its own model) and the bounces of each kind
    counted since it last moved or succeeded."""

    hat: str
    rung: int = 0
    review_issues: int = 0
    blocked: int = 0
    validation_failed: int = 0
    moves: int = 0
    """How often the hat moved, up or down, in the run."""
    moved_by: Bounce | None = None
    """What moved it up last (None: it has not moved up, or a success moved it down)."""
    owed: bool = False
    """Its last work bounced and was not sent back to it, so a topology waking it for new work
    next is no success (a blocked task handed to a planner comes back as new work, not as
    work that held up)."""

    def count(self, bounce: Bounce) -> int:
        """The bounces of kind ``bounce`` counted at this rung."""
        match bounce:
            case Bounce.REVIEW_ISSUES:
                return self.review_issues
            case Bounce.BLOCKED:
                return self.blocked
            case Bounce.VALIDATION_FAILED:
                return self.validation_failed
            case _:
                assert_never(bounce)
