"""Provider limits in the reducer (pure): what a run does when its agent's provider limited
it, as ``LoopPolicy.limits`` says (``docs/architecture/limits.md``).

A limit with no reset told is retried after a backoff, as any passing failure. With a reset:
``wait`` waits for it (the deadline kept in the state, so that a resumed run waits until the
same moment) and tries the same agent again; ``fallback`` moves to the next agent of the
chain at once, and waits as ``wait`` does when none is left; ``stop`` stops the run,
resumably, and so does a reset further away than ``max_wait_s``: orchestration asks for a
person (``PROVIDER_LIMIT``), who resumes the run once the window has reset. Each wait counts
as one of the agent's retries, so a provider that limits for ever cannot keep the loop going.
"""

from __future__ import annotations

from attrs import evolve

from pipeline.core.state import PipelineState, agents_for
from pipeline.events import (
    LimitPolicy,
    LimitResetAwaited,
    OnUsageLimit,
    ProviderLimited,
    UsageWindowReported,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._transitions import agent_failed, stop_when_spent

__all__ = ["limit_reset_awaited", "provider_limited", "usage_window_reported"]


def _said(event: ProviderLimited) -> str:
    """The limit in words, for the ledger's last error and the report."""
    window = f", {event.window}" if event.window else ""
    reset = f"resets at {event.resets_at.isoformat()}" if event.resets_at else "no reset told"
    return (
        f"{event.agent} was limited by its provider ({event.scope.value}{window}; {reset}; "
        f"{event.source}): {event.message}"
    )


def provider_limited(state: PipelineState, event: ProviderLimited) -> PipelineState:
    """The working agent's invocation ended on its provider's limit (the caller checked the
    role is at work)."""
    run, agent = state.run, state.agent
    assert run is not None, "only a started run has agents"
    message = _said(event)
    if event.resets_at is None:
        return agent_failed(state, True, message)
    policy = run.loop.limits or LimitPolicy()
    role = state.progress.role
    assert role is not None
    has_next = agent.chain_position + 1 < len(agents_for(state, role))
    if policy.on_usage_limit is OnUsageLimit.FALLBACK and has_next:
        return agent_failed(state, False, message)
    ledger = evolve(
        state.ledger, last_error=message, agent_failures=state.ledger.agent_failures + 1
    )
    # As any failure: a spend limit the limited invocation reached ends the run before a
    # wait whose end would start the agent again.
    spent = stop_when_spent(state, ledger)
    if spent is not None:
        return spent
    fits = (event.resets_at - event.at).total_seconds() <= policy.max_wait_s
    retries_left = agent.retries < run.budget.max_retries_per_agent
    waits = policy.on_usage_limit is not OnUsageLimit.STOP and fits and retries_left
    # A stop is asked of orchestration (RequireHuman), so that the facts the handler reports
    # after the outcome (what the agent wrote meanwhile) are folded before the run stops.
    cursor = evolve(
        agent,
        retries=agent.retries + 1 if waits else 0,
        in_flight=False,
        awaiting_output=False,
        backoff_ceiling_ms=None,
        limit_until=max(event.resets_at, event.at),
        limit_stop=not waits,
    )
    if not waits:
        ledger = evolve(ledger, last_error=f"{message} (ralph resume once it has reset)")
    return advance(state, agent=cursor, ledger=ledger)


def limit_reset_awaited(state: PipelineState, event: LimitResetAwaited) -> PipelineState:
    """The wait for the reset is over: the task's agent may try again."""
    agent = state.agent
    if agent.limit_until is None or agent.limit_stop or state.progress.role is not event.role:
        return anomaly(state, event, f"no {event.role.value} task waits for a limit's reset")
    return advance(state, agent=evolve(agent, limit_until=None))


def usage_window_reported(state: PipelineState, event: UsageWindowReported) -> PipelineState:
    """A provider told how full its usage window is: past ``stop_at_utilization``, the run
    stops for a person before its next agent starts (orchestration asks), so that the work
    done so far is kept and the window is not spent."""
    run = state.run
    share = None if run is None or run.loop.limits is None else run.loop.limits.stop_at_utilization
    if share is None or event.utilization < share:
        return advance(state)
    reset = f", which resets at {event.resets_at.isoformat()}" if event.resets_at else ""
    full = (
        f"{event.agent}'s provider reported its {event.window} window {event.utilization:.0%} "
        f"full{reset}: past [limits] stop_at_utilization = {share} (ralph resume once it "
        "has reset)"
    )
    return advance(state, ledger=evolve(state.ledger, window_full=full))
