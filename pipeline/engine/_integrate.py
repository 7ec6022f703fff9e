"""The integrator's loop: a completed run's integration, step by step, each step's facts in
the run's own log before the next is asked for.

It is the durable runner's loop over the merge queue's effects: ``next_integration_effect``
decides from the state, the handler carries the step out, the facts are appended with the
expected sequence and folded. Killed anywhere, it goes on from where the log says it was:
each step's handler recognises what it already did.

Interrupted (SIGINT, SIGTERM through an :class:`Interruption`), it stops at a safe point and
raises :class:`Interrupted`: before a step, or at once inside a replay or a gate (the step is
abandoned: a gate's or merger's process group stopped, the scratch worktree left for the next
integrator to remove); never inside the move of the target, which is seen to its end (its
compare-and-swap and the work tree's two-tree read belong together). Nothing is recorded for
the stop: the log says where the integration stands, and the next integrator goes on.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline import PipelineError
from pipeline.core.effects import IntegrationEffect, MoveTarget
from pipeline.core.state import PipelineState
from pipeline.engine._durable import _NOBODY, _commit, load_state
from pipeline.engine._interrupt import Interrupted, Interruption
from pipeline.engine._observer import RunObserver
from pipeline.events import IntegrationQueued, PipelineEvent, RunId
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import RunStore
from pipeline.orchestration import next_integration_effect

__all__ = ["integrate"]

IntegrationHandler = Callable[[IntegrationEffect], tuple[PipelineEvent, ...]]


def integrate(
    store: RunStore,
    handler: IntegrationHandler,
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
    while (effect := next_integration_effect(state)) is not None:
        before = state.integration
        if interruption.reason is not None:
            raise Interrupted(interruption.reason)
        if isinstance(effect, MoveTarget):
            done = handler(effect)  # to its end: a stop asked for meanwhile waits for it
        else:
            with interruption.armed():
                done = handler(effect)
        facts = [redactor.event(fact) for fact in done]
        state = _commit(store, run_id, state, facts, observer)
        if state.integration == before:
            # Facts that do not fit would ask for the same step forever: a handler's bug.
            raise PipelineError(
                f"the integrator's facts for {type(effect).__name__} changed nothing: "
                f"{state.ledger.last_anomaly}"
            )
    return state
