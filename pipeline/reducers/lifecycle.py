"""Reducer for lifecycle facts: start, interruption, resumption, salvage, completion (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import (
    Phase,
    PipelineState,
    Progress,
    Routing,
    RunInfo,
    Step,
    TerminationReason,
)
from pipeline.events import (
    LifecycleEvent,
    RunAbandoned,
    RunCompleted,
    RunForked,
    RunInterrupted,
    RunResumed,
    RunSalvaged,
    RunStarted,
    SandboxChecked,
)
from pipeline.reducers._build import advance, anomaly, noted, resume_fact
from pipeline.reducers._routing import first_topic
from pipeline.reducers._transitions import (
    finalize,
    interrupt,
    keep_wait,
    new_task,
    start_development,
    stop_when_spent,
)

__all__ = ["reduce_lifecycle"]


def reduce_lifecycle(state: PipelineState, event: LifecycleEvent) -> PipelineState:
    """Fold one lifecycle fact into ``state``."""
    progress = state.progress
    match event:
        case RunStarted():
            if progress.phase is not Phase.NOT_STARTED:
                return anomaly(state, event, "the run has already started")
            run = RunInfo(
                run_id=event.run_id,
                budget=event.budget,
                chains={chain.role: chain.agents for chain in event.chains},
                rebase_onto=event.rebase_onto,
                started_at=event.at,
                loop=event.loop,
            )
            topology = event.loop.topology
            if topology is not None:
                # A user's topology has no planning phase: its starting event wakes a hat.
                first = first_topic(topology)
                intake = evolve(state.intake, seen_topics=frozenset({first.topic}))
                started = evolve(state, run=run, intake=intake, routing=Routing(pending=(first,)))
                return start_development(started)
            # Spend limits are above 0 (``Budget``), so a new run always has room to start.
            return advance(state, run=run, progress=Progress(phase=Phase.PLANNING, step=Step.BEGIN))
        case RunInterrupted():
            if progress.phase is Phase.NOT_STARTED:
                return anomaly(state, event, "the run has not started")
            ledger = evolve(
                state.ledger,
                last_error=f"interrupted: {event.reason}",
                interruption_facts=state.ledger.interruption_facts + 1,
            )
            return interrupt(
                state, TerminationReason.INTERRUPTED, progress.phase, progress.step, ledger
            )
        case RunAbandoned():
            if progress.phase is Phase.NOT_STARTED or progress.phase is Phase.COMPLETE:
                return anomaly(state, event, "only a started, unfinished run can be abandoned")
            ledger = evolve(state.ledger, last_error=f"abandoned: {event.reason}")
            # Finalization gives the prompt file its permissions back, then the run ends.
            return finalize(state, TerminationReason.ABANDONED, ledger)
        case RunResumed():
            return _resume(state, event)
        case RunSalvaged():
            if progress.phase is Phase.NOT_STARTED:
                return anomaly(state, event, "the run has not started")
            # A note only: the phase stays, and effect ids do not count the fact.
            note = f"from {event.source}: kept {event.kept} events; {event.reason}"
            ledger = evolve(state.ledger, salvages=(*state.ledger.salvages, note))
            return advance(state, ledger=ledger)
        case RunForked():
            if progress.phase is Phase.NOT_STARTED or state.run is None:
                return anomaly(state, event, "the run has not started")
            return _forked(state, state.run, event)
        case RunCompleted():
            if progress.phase is Phase.FINALIZING and progress.step is Step.COMPLETE:
                ledger = evolve(state.ledger, completed_at=event.at)
                if event.reason is not None and event.reason is not progress.termination:
                    # The fold decided how the run ends; a handler echoing another reason
                    # completes the run all the same, and the mismatch is recorded.
                    decided = progress.termination.value if progress.termination else "none"
                    why = f"reports {event.reason.value}, but the run ends with {decided}"
                    ledger = noted(ledger, state, event, why)
                return advance(
                    state,
                    progress=evolve(progress, phase=Phase.COMPLETE, step=Step.DONE),
                    ledger=ledger,
                )
            return anomaly(state, event, "finalization has not reached completion")
        case SandboxChecked():
            if progress.phase is Phase.NOT_STARTED:
                return anomaly(state, event, "the run has not started")
            # What the run's agents run in is the views' to show; the loop goes on alike.
            return advance(state, ledger=resume_fact(state.ledger, state))
        case _:
            assert_never(event)


def _forked(state: PipelineState, run: RunInfo, event: RunForked) -> PipelineState:
    """The fork goes on from the state its copied facts made, with its own agent and model
    when it names them; a new first agent restarts the task's chain at it."""
    if event.agent is None and event.model is None:
        return advance(state)
    agent, model = event.agent or run.agent, event.model or run.model
    cursor = state.agent if event.agent is None else evolve(state.agent, chain_position=0)
    return advance(state, run=evolve(run, agent=agent, model=model), agent=cursor)


def _resume(state: PipelineState, event: RunResumed) -> PipelineState:
    """Take the run up again.

    From ``INTERRUPTED`` the run goes back to where it stopped, with the chains of a role that
    was handed to dev-fix starting over (a wait for a limit's reset keeps its deadline). In a
    running phase (the process died without an interruption fact) an invocation that started
    but never reported is run again without counting it as a failure.
    """
    progress, agent = state.progress, state.agent
    if progress.phase is Phase.NOT_STARTED:
        return anomaly(state, event, "the run has not started")
    resumed_ledger = evolve(
        state.ledger,
        resumes=state.ledger.resumes + 1,
        last_resume_sequence=state.sequence + 1,
    )
    if progress.phase is not Phase.INTERRUPTED:
        if progress.role is not None:
            spent = stop_when_spent(state, resumed_ledger)
            if spent is not None:
                return spent
        # An attempt cut short (its start is in the log, its outcome never came) is run
        # again under its own number.
        attempt = agent.attempt - 1 if agent.in_flight else agent.attempt
        cursor = evolve(agent, attempt=attempt, in_flight=False)
        return advance(state, agent=cursor, ledger=resumed_ledger)
    point = progress.resume
    resumed = evolve(
        progress,
        phase=Phase.PLANNING if point is None else point.phase,
        step=Step.BEGIN if point is None else point.step,
        termination=None if point is None else point.termination,
        resume=None,
        dev_fix=None,
    )
    if resumed.role is not None:
        # The limits are folds of the log: a resumed run does not get its money back.
        spent = stop_when_spent(state, resumed_ledger, resumed)
        if spent is not None:
            return spent
    cursor = keep_wait(new_task(agent), agent)
    return advance(state, progress=resumed, agent=cursor, ledger=resumed_ledger)
