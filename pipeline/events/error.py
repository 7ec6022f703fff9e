"""Error facts: an agent chain ran out, the workspace failed, a budget was spent (pure data)."""

from __future__ import annotations

import enum
from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.values import INSTANT_VALIDATOR, Instant, Role, WorkspaceErrorKind

__all__ = [
    "AgentChainExhausted",
    "BudgetExceeded",
    "BudgetKind",
    "ErrorEvent",
    "WorkspaceIoError",
]


@enum.unique
class BudgetKind(enum.StrEnum):
    """Budgets that only a handler can measure (wall clock, money)."""

    RUNTIME = "runtime"
    COST = "cost"


@final
@frozen(kw_only=True)
class AgentChainExhausted:
    """Every agent in ``role``'s chain has failed for the current task."""

    role: Role
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class WorkspaceIoError:
    """Reading or writing the workspace failed (``kind``, the ``path`` and the OS ``message``)."""

    kind: WorkspaceErrorKind
    path: str
    message: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class BudgetExceeded:
    """A handler measured that the ``budget`` is spent (``detail`` gives the figures)."""

    budget: BudgetKind
    detail: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


ErrorEvent: TypeAlias = AgentChainExhausted | WorkspaceIoError | BudgetExceeded
"""Facts about errors the pipeline must react to."""
