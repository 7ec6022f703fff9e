"""``next_integration_effect``: the integrator's next step, decided from the state alone
(pure).

A queued integration is replayed onto its target (again with a resolver agent at the
conflicts, when one is named and the replay met some); a replayed one runs the run's final gates
(those of ``final`` and ``completion``: what judged the run done judges the replay) one by
one, pinned as the run's were (to the target's head: :func:`landing_pinned_to`), then moves
the target. Nothing is asked once it landed, conflicted or failed.
"""

from __future__ import annotations

from typing import assert_never

from pipeline.core.effects import GateReplayed, IntegrationEffect, MoveTarget, ReplayBranch
from pipeline.core.state import IntegrationStatus, Phase, PipelineState
from pipeline.events import Count, GateBoundary, GateSpec
from pipeline.orchestration._next import effect_id
from pipeline.orchestration._pinning import landing_pinned_to

__all__ = ["integration_gates", "next_integration_effect"]

_FINAL_BOUNDARIES = frozenset({GateBoundary.FINAL, GateBoundary.COMPLETION})


def integration_gates(state: PipelineState) -> tuple[GateSpec, ...]:
    """The gates an integration of the run runs on the replayed head, in order."""
    if state.run is None:
        return ()
    return tuple(g for g in state.run.loop.gates if _FINAL_BOUNDARIES.intersection(g.on))


def next_integration_effect(state: PipelineState) -> IntegrationEffect | None:
    """The one step the run's integration needs next; None when there is none (no
    integration, or it ended). Total over every state."""
    now, run = state.integration, state.run
    if now is None or run is None or state.progress.phase is not Phase.COMPLETE:
        return None
    eid = effect_id(state)
    status = now.status
    match status:
        case IntegrationStatus.QUEUED | IntegrationStatus.RESOLVING:
            ledger = state.ledger
            resolving = status is IntegrationStatus.RESOLVING
            return ReplayBranch(
                effect_id=eid,
                run_id=run.run_id,
                branch=now.branch,
                target=now.target,
                last_commit=ledger.last_commit_sha,
                commits=Count(ledger.commits),
                resolver=now.resolver if resolving else None,
                paths=now.paths if resolving else (),
            )
        case IntegrationStatus.REPLAYED:
            if now.onto is None or now.tip is None or now.head is None:
                return None  # the reducer records all three with the replay
            pin, tamper = landing_pinned_to(state), run.loop.tamper
            for gate in integration_gates(state):
                if gate.name not in now.passed:
                    return GateReplayed(
                        effect_id=eid,
                        gate=gate.name,
                        head=now.head,
                        argv=gate.argv,
                        timeout_s=gate.timeout_s,
                        inactivity_timeout_s=gate.inactivity_timeout_s,
                        pin_base=pin,
                        test_paths=() if pin is None or tamper is None else tamper.test_paths,
                    )
            return MoveTarget(
                effect_id=eid,
                target=now.target,
                old=now.onto,
                new=now.head,
                branch=now.branch,
                tip=now.tip,
            )
        case IntegrationStatus.LANDED | IntegrationStatus.CONFLICTED | IntegrationStatus.FAILED:
            return None
        case _:
            assert_never(status)
