"""Judging an agent's structured response: accept it, ask for a correction, or give up (pure).

A role whose hat has a ``response_schema`` answers with a structured response after each
invocation; the handler judged it against the schema, and the fact carries the verdict. A
valid one lets the role's report be collected; an invalid one is followed by a
formatting-correction turn with the same agent, at most ``max_formatting_retries`` times;
after that the run needs a person (``FORMATTING_CORRECTION_EXHAUSTED``).
"""

from __future__ import annotations

from attrs import evolve

from pipeline.core.state import PipelineState, ResponseCheck, Step, response_schema_for
from pipeline.events import ResponseStatus, ResponseSubmitted
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import stop_when_spent

__all__ = ["judge_response"]


def judge_response(state: PipelineState, event: ResponseSubmitted) -> PipelineState:
    """Fold ``event``: act on the verdict the handler recorded."""
    progress, agent, run = state.progress, state.agent, state.run
    assert run is not None, "reduce lets responses into started runs only"
    role = event.role
    if progress.step is not Step.INVOKE or progress.role is not role or not agent.awaiting_output:
        return anomaly(state, event, f"no {role.value} response is awaited")
    if response_schema_for(state, role) is None:
        return anomaly(state, event, f"the {role.value} hat asks for no structured response")
    previous = state.ledger.response
    failures = 0 if previous is None else previous.failures
    ledger = state.ledger
    if event.status is ResponseStatus.VALID:
        check = ResponseCheck(
            valid=True, failures=failures, raw_response=event.raw_response, violations=()
        )
        return advance(state, ledger=evolve(ledger, response=check))
    violations = event.problems
    failures += 1
    check = ResponseCheck(
        valid=False, failures=failures, raw_response=event.raw_response, violations=violations
    )
    why = f"{role.value} response {event.status.value}: " + "; ".join(violations)
    judged = evolve(ledger, response=check, last_error=why)
    # The invocation's output was this response: the next turn is a new attempt's.
    cursor = evolve(agent, in_flight=False, awaiting_output=False, backoff_ceiling_ms=None)
    if failures <= run.loop.max_formatting_retries:
        # A correction turn: its own prompt, then the same agent again (an invocation like
        # any other: not once a spend limit is reached).
        spent = stop_when_spent(state, judged)
        if spent is not None:
            return spent
        correcting = evolve(progress, step=Step.PROMPT)
        return advance(state, progress=correcting, agent=cursor, ledger=judged)
    # Exhausted: orchestration asks for a person.
    return advance(state, agent=cursor, ledger=judged)
