"""Final validation facts: the finished work passed or failed its checks (pure data)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Instant

__all__ = ["FinalValidationFailed", "FinalValidationPassed", "ValidationEvent"]


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


ValidationEvent: TypeAlias = FinalValidationPassed | FinalValidationFailed
"""Facts of the final validation phase."""
