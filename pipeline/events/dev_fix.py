"""Dev-fix facts: the fixer was called in and reported; the completion marker was written (pure)."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Instant, Role

__all__ = ["AwaitingDevFixEvent", "CompletionMarkerEmitted", "DevFixCompleted", "DevFixTriggered"]


@final
@frozen(kw_only=True)
class DevFixTriggered:
    """Dev-fix began for the failure of ``failed_role`` (``reason`` is what failed)."""

    failed_role: Role
    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class DevFixCompleted:
    """The fixer agent finished its diagnosis; ``success`` says whether it believes it fixed it."""

    success: bool
    summary: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class CompletionMarkerEmitted:
    """The completion marker was written at ``path`` with ``status`` and ``reason``."""

    path: str
    status: str
    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


AwaitingDevFixEvent: TypeAlias = DevFixTriggered | DevFixCompleted | CompletionMarkerEmitted
"""Facts of the dev-fix path taken when an agent chain is exhausted."""
