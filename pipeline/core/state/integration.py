"""Where a completed run's integration stands: its branch on the way to its target (pure
data, folded from the ``integration`` facts)."""

from __future__ import annotations

import enum
from typing import Final, final

from attrs import frozen

from pipeline.events.values import AgentName

__all__ = ["MAX_REPLAYS", "Integration", "IntegrationStatus"]

MAX_REPLAYS: Final = 3
"""How many times a branch is replayed onto a target that others keep moving before its
integration fails: each replay ends in compare-and-swap, so a busy target costs a replay, and
this bound ends the loop whatever the world does (with each of its resolvers tried at most
once per replay)."""


@enum.unique
class IntegrationStatus(enum.StrEnum):
    """The steps of an integration, and how it ends."""

    QUEUED = "queued"
    """Waiting for its branch to be replayed onto the target's head."""
    RESOLVING = "resolving"
    """The replay met conflicts: it is made again with a resolver agent at them."""
    REPLAYED = "replayed"
    """Replayed: the gates run on the replayed head, then the target moves to it."""
    LANDED = "landed"
    CONFLICTED = "conflicted"
    """The replay met conflicts: a person resolves them, then queues it again."""
    FAILED = "failed"

    @property
    def under_way(self) -> bool:
        """Whether the integration still has steps to take."""
        return self in (
            IntegrationStatus.QUEUED,
            IntegrationStatus.RESOLVING,
            IntegrationStatus.REPLAYED,
        )


@final
@frozen(kw_only=True)
class Integration:
    """The run's branch on its way to ``target``: the replay under way (``onto`` the
    target's head, from the branch's ``tip``, giving ``head``), the gates passed on it, how
    many replays were made, the agents that resolve conflicts (``resolvers``; ``tried`` of
    them so far this replay, the last being ``resolver``), and how it ended (the conflicted
    ``paths``, or the ``reason`` it failed). ``pinned`` is the commit the gates on the
    replayed head took the person's checks from (None: none ran pinned), ``restored`` the
    files whose branch's version they did not use."""

    branch: str
    target: str
    resolvers: tuple[AgentName, ...] = ()
    tried: int = 0
    resolver: AgentName | None = None
    resolved_by: AgentName | None = None
    """The resolver whose resolution the replay under way (or landed) holds."""
    status: IntegrationStatus = IntegrationStatus.QUEUED
    onto: str | None = None
    tip: str | None = None
    head: str | None = None
    passed: tuple[str, ...] = ()
    replays: int = 0
    paths: tuple[str, ...] = ()
    reason: str | None = None
    pinned: str | None = None
    restored: tuple[str, ...] = ()
