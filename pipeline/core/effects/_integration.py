"""Integration effects: the steps that land a completed run's branch on a target (pure
data). They are a union of their own: only the integrator carries them out, after the run."""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.core.effects._id import EffectId
from pipeline.events.values import COUNT_VALIDATOR, OPTIONAL_COUNT_VALIDATOR, AgentName, Count

__all__ = ["GateReplayed", "IntegrationEffect", "MoveTarget", "ReplayBranch"]


@final
@frozen(kw_only=True)
class ReplayBranch:
    """Replay ``branch``'s commits onto ``target``'s head in a scratch worktree, the branch
    itself untouched, and check that every commit of run ``run_id`` is among them: the log
    says it made ``commits`` of them, the last being ``last_commit``. With ``resolver``, the
    agent resolves each conflict the replay meets (the last replay's were in ``paths``)."""

    effect_id: EffectId
    run_id: str
    branch: str
    target: str
    last_commit: str | None
    commits: Count = field(validator=COUNT_VALIDATOR)
    resolver: AgentName | None = None
    paths: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class GateReplayed:
    """Run gate ``gate``'s command ``argv`` on the replayed head ``head`` (in the scratch
    worktree) within its timeouts, and report how it ended. With ``pin_base``, in the world
    of ``head`` whose tests and test configuration (``test_paths`` besides the built-in
    patterns) and the files ``argv`` names are as commit ``pin_base`` has them, as a run's
    pinned gate runs."""

    effect_id: EffectId
    gate: str
    head: str
    argv: tuple[str, ...]
    timeout_s: Count = field(validator=COUNT_VALIDATOR)
    inactivity_timeout_s: Count | None = field(default=None, validator=OPTIONAL_COUNT_VALIDATOR)
    pin_base: str | None = None
    test_paths: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class MoveTarget:
    """Move ``target`` from ``old`` to ``new`` by compare-and-swap, with the work tree that
    has it checked out; then ``branch`` from ``tip`` to ``new``, with its worktree."""

    effect_id: EffectId
    target: str
    old: str
    new: str
    branch: str
    tip: str


IntegrationEffect: TypeAlias = ReplayBranch | GateReplayed | MoveTarget
"""What the integrator is asked to do next."""
