"""Reducer for integration facts: a completed run's branch on its way to a target (pure).

Only a complete run integrates. A queued integration is replayed onto the target, gated on
the replayed head, and lands when the target moves to it; a conflict or a failure ends it
with the branch untouched, unless agents to resolve conflicts were named: then each, in
turn, replays it again with the conflicts to resolve. Queuing it again once it ended starts
over (after a landing: the
branch's commits the target still lacks). A target someone else moved
meanwhile costs a replay; after ``MAX_REPLAYS`` the integration fails, so the loop ends
whatever the world does.
"""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import (
    MAX_REPLAYS,
    Integration,
    IntegrationStatus,
    Phase,
    PipelineState,
)
from pipeline.events import (
    GateStatus,
    IntegrationConflicted,
    IntegrationEvent,
    IntegrationFailed,
    IntegrationGated,
    IntegrationQueued,
    IntegrationRebased,
    IntegrationResolved,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._gates import restored_named

__all__ = ["reduce_integration"]

_QUEUED, _REPLAYED = IntegrationStatus.QUEUED, IntegrationStatus.REPLAYED
_REPLAYING = frozenset({IntegrationStatus.QUEUED, IntegrationStatus.RESOLVING})
"""Where a replay (plain, or with a resolver) is under way."""


def reduce_integration(state: PipelineState, event: IntegrationEvent) -> PipelineState:
    """Fold one integration fact into ``state``."""
    if state.progress.phase is not Phase.COMPLETE:
        return anomaly(state, event, "only a complete run's branch is integrated")
    now = state.integration
    if isinstance(event, IntegrationQueued):
        if now is not None and now.status.under_way:
            return anomaly(state, event, f"its integration is already {now.status.value}")
        queued = Integration(branch=event.branch, target=event.target, resolvers=event.resolvers)
        return advance(state, integration=queued)
    if now is None or not now.status.under_way:
        return anomaly(state, event, "no integration is under way")
    match event:
        case IntegrationRebased():
            if now.status not in _REPLAYING:
                return anomaly(state, event, "the branch was already replayed")
            replayed = evolve(
                now,
                status=_REPLAYED,
                onto=event.onto,
                tip=event.tip,
                head=event.head,
                passed=(),
                replays=now.replays + 1,
                pinned=None,
                restored=(),
            )
            return advance(state, integration=replayed)
        case IntegrationConflicted():
            if now.status not in _REPLAYING:
                return anomaly(state, event, "no replay was under way")
            if now.tried < len(now.resolvers):
                # The next resolver replays it again, with the conflicts to resolve.
                resolver = now.resolvers[now.tried]
                again = evolve(
                    now,
                    status=IntegrationStatus.RESOLVING,
                    resolver=resolver,
                    tried=now.tried + 1,
                    paths=event.paths,
                )
                return advance(state, integration=again)
            ended = evolve(now, status=IntegrationStatus.CONFLICTED, paths=event.paths)
            return advance(state, integration=ended)
        case IntegrationResolved():
            if now.status is not IntegrationStatus.RESOLVING or event.agent != now.resolver:
                return anomaly(state, event, "no resolver of this one was at work")
            resolved = evolve(now, paths=event.paths, resolved_by=event.agent)
            return advance(state, integration=resolved)
        case IntegrationGated():
            if now.status is not _REPLAYED or event.head != now.head:
                return anomaly(state, event, "the gate ran on no replayed head of this one")
            restored = tuple(dict.fromkeys((*now.restored, *event.restored)))
            if event.status is GateStatus.PASSED:
                passed = evolve(
                    now,
                    passed=(*now.passed, event.gate),
                    pinned=event.pinned or now.pinned,
                    restored=restored,
                )
                return advance(state, integration=passed)
            said = "" if event.exit_code is None else f" (exit {event.exit_code})"
            reason = f"gate {event.gate} {event.status.value}{said} on the replayed head"
            reason += _pinning_said(event, now.target)
            ended = evolve(now, pinned=event.pinned or now.pinned, restored=restored)
            return _failed(state, ended, reason)
        case TargetMoved():
            if now.status is not _REPLAYED:
                return anomaly(state, event, "nothing was about to move the target")
            if now.replays >= MAX_REPLAYS:
                reason = f"{now.target} moved under each of {now.replays} replays"
                return _failed(state, now, reason)
            again = evolve(
                now,
                status=_QUEUED,
                onto=None,
                tip=None,
                head=None,
                passed=(),
                tried=0,
                resolver=None,
                resolved_by=None,
                pinned=None,
                restored=(),
            )
            return advance(state, integration=again)
        case TargetAdvanced():
            if now.status is not _REPLAYED or event.new != now.head:
                return anomaly(state, event, "the target moved to no replayed head of this one")
            return advance(state, integration=evolve(now, status=IntegrationStatus.LANDED))
        case IntegrationFailed():
            return _failed(state, now, event.reason)
        case _:
            assert_never(event)


def _pinning_said(event: IntegrationGated, target: str) -> str:
    """What a failed gate's pinning did, for the reason the landing failed: which of the
    branch's changes it did not use; nothing when it ran unpinned or used them all."""
    if event.pinned is None or not event.restored:
        return ""
    return (
        f"; it ran pinned to {target}'s {event.pinned[:12]}, with {target}'s "
        f"{restored_named(event.restored)}: the branch's changes to them were not used"
    )


def _failed(state: PipelineState, now: Integration, reason: str) -> PipelineState:
    return advance(state, integration=evolve(now, status=IntegrationStatus.FAILED, reason=reason))
