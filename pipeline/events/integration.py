"""Integration facts: a completed run's branch landing on a target branch through the merge
queue (pure data).

They are recorded in the completed run's own log, after ``RunCompleted``: the run's work and
how it landed are one history. Shas are as git reported them; nothing here is a command.
"""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen
from attrs.validators import optional

from pipeline.events._validators import EXIT_CODE_VALIDATOR
from pipeline.events.values import INSTANT_VALIDATOR, AgentName, ExitCode, GateStatus, Instant

__all__ = [
    "IntegrationConflicted",
    "IntegrationEvent",
    "IntegrationFailed",
    "IntegrationGated",
    "IntegrationQueued",
    "IntegrationRebased",
    "IntegrationResolved",
    "TargetAdvanced",
    "TargetMoved",
]


@final
@frozen(kw_only=True)
class IntegrationQueued:
    """The run's ``branch`` was queued to land on the branch ``target``; a replay that meets
    conflicts goes to the agents ``resolvers`` in turn (none: it stops for a person)."""

    branch: str
    target: str
    resolvers: tuple[AgentName, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class IntegrationRebased:
    """The branch's commits up to ``tip`` were replayed onto ``onto`` (the target's head
    then) in a scratch worktree, giving ``head``; every commit the run made is among them
    (checked by its ``Ralph-Effect`` trailer). The branch itself has not moved."""

    onto: str
    tip: str
    head: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class IntegrationConflicted:
    """Replaying the branch onto ``onto`` stopped on conflicts in ``paths``; the replay was
    abandoned and nothing moved."""

    onto: str
    paths: tuple[str, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class IntegrationResolved:
    """Agent ``agent`` resolved the replay's conflicts in ``paths`` (no conflict marker left,
    the replay went on); the gates judge the result like any replay's."""

    agent: AgentName
    paths: tuple[str, ...]
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class IntegrationGated:
    """Gate ``gate`` ran on the replayed head ``head`` and ended ``status`` (its exit code
    when it exited); ``tail`` is the end of its output. ``pinned`` is the commit its checks
    came from (the target's head the branch was replayed onto; None: it ran on the replayed
    head as it is), ``restored`` the files whose branch's version it did not use (put back
    as that commit has them, or left out), as in ``GateFinished``."""

    gate: str
    head: str
    status: GateStatus
    exit_code: ExitCode | None = field(validator=optional(EXIT_CODE_VALIDATOR))
    tail: str
    pinned: str | None = None
    restored: tuple[str, ...] = ()
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class TargetMoved:
    """The target was at ``found``, not at ``expected`` where the replay was made: someone
    else moved it. Nothing was changed."""

    expected: str
    found: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class TargetAdvanced:
    """The branch ``target`` moved from ``old`` to ``new`` by compare-and-swap (and the work
    tree that has it checked out with it), and the run's branch to ``new`` after it."""

    target: str
    old: str
    new: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class IntegrationFailed:
    """The integration cannot go on, for ``reason`` (a commit of the run's missing after the
    replay, a work tree with changes in the way, git failing); the target, the branch and its
    worktree are as they were."""

    reason: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


IntegrationEvent: TypeAlias = (
    IntegrationQueued
    | IntegrationRebased
    | IntegrationConflicted
    | IntegrationResolved
    | IntegrationGated
    | TargetMoved
    | TargetAdvanced
    | IntegrationFailed
)
"""Facts about a completed run's branch landing on its target."""
