"""The next state after one event, and recording anomalies (pure).

Every reducer path ends in exactly one call to :func:`advance` (or :func:`anomaly`), which
builds the new top-level record with the sequence moved on by one.
"""

from __future__ import annotations

from attrs import evolve

from pipeline.core.state import (
    AgentCursor,
    Checkpoints,
    Context,
    Gating,
    Hooks,
    Intake,
    Integration,
    Ledger,
    PipelineState,
    Progress,
    Routing,
    RunInfo,
)
from pipeline.events import WIRE_TAGS, PipelineEvent

__all__ = ["advance", "anomaly", "noted", "resume_fact"]


def advance(
    state: PipelineState,
    *,
    run: RunInfo | None = None,
    progress: Progress | None = None,
    agent: AgentCursor | None = None,
    intake: Intake | None = None,
    ledger: Ledger | None = None,
    checkpoints: Checkpoints | None = None,
    routing: Routing | None = None,
    gating: Gating | None = None,
    integration: Integration | None = None,
    context: Context | None = None,
    hooks: Hooks | None = None,
) -> PipelineState:
    """The state after one more event, with the given parts replaced."""
    return PipelineState(
        sequence=state.sequence + 1,
        run=state.run if run is None else run,
        progress=state.progress if progress is None else progress,
        agent=state.agent if agent is None else agent,
        intake=state.intake if intake is None else intake,
        ledger=state.ledger if ledger is None else ledger,
        checkpoints=state.checkpoints if checkpoints is None else checkpoints,
        routing=state.routing if routing is None else routing,
        gating=state.gating if gating is None else gating,
        ladders=state.ladders,
        integration=state.integration if integration is None else integration,
        context=state.context if context is None else context,
        hooks=state.hooks if hooks is None else hooks,
    )


def anomaly(state: PipelineState, event: PipelineEvent, why: str) -> PipelineState:
    """Record that ``event`` did not fit ``state``: counted and described, never raised."""
    return advance(state, ledger=noted(state.ledger, state, event, why))


def noted(ledger: Ledger, state: PipelineState, event: PipelineEvent, why: str) -> Ledger:
    """``ledger`` with ``event``, which did not (wholly) fit ``state``, counted and described
    as an anomaly."""
    description = f"{WIRE_TAGS[type(event)]} in {state.progress.phase.value}: {why}"
    return evolve(ledger, anomalies=ledger.anomalies + 1, last_anomaly=description)


def resume_fact(ledger: Ledger, state: PipelineState) -> Ledger:
    """The ledger after a fact recorded right after a resume, before the first effect's (the
    world the run goes on in, ``SandboxChecked``; a hook run again before the step the stop
    cut short): not counted in effect ids, and the run still just resumed, so the step keeps
    its id and a commit the stopped process made is found by its trailer. Any other time,
    the ledger as it was."""
    if ledger.last_resume_sequence != state.sequence:
        return ledger
    return evolve(
        ledger,
        resume_facts=ledger.resume_facts + 1,
        last_resume_sequence=state.sequence + 1,
    )
