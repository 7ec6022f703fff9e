"""The landing: a completed run's integration as one straight function, each step's facts in
the run's own log before the next is taken.

Where it stands is the run's state (``state.integration``, folded from those facts), so it
is idempotent: killed anywhere, the next call goes on from where the log says it was, and
each step recognises what it already did. A queued (or resolving) integration is replayed
onto its target; a replayed one runs the run's final gates one by one (those of ``final``
and ``completion``: what judged the run done judges the replay), then moves the target.
Nothing is done once it landed, conflicted or failed.

Interrupted (SIGINT, SIGTERM through an :class:`Interruption`), it stops at a safe point and
raises :class:`Interrupted`: before a step, or at once inside a replay or a gate (the step is
abandoned: a gate's or merger's process group stopped, the scratch worktree left for the next
integrator to remove); never inside the move of the target, which is seen to its end (its
compare-and-swap and the work tree's two-tree read belong together). Nothing is recorded for
the stop: the log says where the integration stands, and the next integrator goes on.
"""

from __future__ import annotations

from typing import Protocol

from pipeline import PipelineError
from pipeline.core.state import IntegrationStatus, PipelineState
from pipeline.engine._durable import _NOBODY, _commit, _masked, load_state
from pipeline.engine._interrupt import Interrupted, Interruption
from pipeline.engine._observer import RunObserver
from pipeline.events import GateSpec, IntegrationQueued, PipelineEvent, RunId
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import RunStore
from pipeline.orchestration import integration_gates

__all__ = ["LandingSteps", "integrate"]


class LandingSteps(Protocol):
    """The landing's three git steps, each reporting what it did as facts (the integrator's:
    :class:`~pipeline.handlers.integration.Integrator`)."""

    def replay(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        """Replay the run's branch onto its target's head."""

    def gate(self, state: PipelineState, gate: GateSpec) -> tuple[PipelineEvent, ...]:
        """Run ``gate`` on the replayed head."""

    def move(self, state: PipelineState) -> tuple[PipelineEvent, ...]:
        """Move the target, then the run's branch, to the replayed head."""


def integrate(
    store: RunStore,
    landing: LandingSteps,
    run_id: RunId,
    *,
    redactor: Redactor,
    queued: IntegrationQueued | None = None,
    observer: RunObserver | None = None,
    interruption: Interruption | None = None,
) -> PipelineState:
    """Record ``queued`` (a new request; None: go on with the one under way), then carry out
    the run's integration until it landed, conflicted or failed; the state after it. A
    request to ``interruption`` raises :class:`Interrupted` at the next safe point;
    ``observer`` is told each fact stored."""
    observer = _NOBODY if observer is None else observer
    interruption = Interruption() if interruption is None else interruption
    if interruption.reason is not None:
        raise Interrupted(interruption.reason)
    state, _ = load_state(store, run_id)
    if queued is not None:
        state = _commit(store, run_id, state, [queued], observer)
    while (before := state.integration) is not None and before.status.under_way:
        if interruption.reason is not None:
            raise Interrupted(interruption.reason)
        gates = [g for g in integration_gates(state) if g.name not in before.passed]
        if before.status is not IntegrationStatus.REPLAYED:
            with interruption.armed():
                done = landing.replay(state)
        elif gates:
            with interruption.armed():
                done = landing.gate(state, gates[0])
        else:
            done = landing.move(state)  # to its end: a stop asked for meanwhile waits for it
        state = _commit(store, run_id, state, _masked(redactor, done), observer)
        if state.integration == before:
            # Facts that do not fit would ask for the same step forever: a handler's bug.
            raise PipelineError(
                f"the integrator's facts changed nothing ({before.status.value}): "
                f"{state.ledger.last_anomaly}"
            )
    return state
