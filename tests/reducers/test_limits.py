"""Provider limits, decided by the reducer from ``LoopPolicy.limits``: wait until the reset
the provider told of (its deadline kept in the log), fall back to the next agent, or stop for
a person, resumably; a limit with no reset told is retried after a backoff. Driven through
the real loop against a scripted simulated world."""

from __future__ import annotations

from datetime import timedelta

from pipeline.core.effects import BackOff, RequireHuman, WaitForLimitReset
from pipeline.core.state import Phase, TerminationReason
from pipeline.engine.simulation import AgentOutcome
from pipeline.events import (
    AgentName,
    Count,
    LimitPolicy,
    LimitResetAwaited,
    OnUsageLimit,
    ProviderLimited,
    Role,
    RunResumed,
)
from pipeline.orchestration import PROVIDER_LIMIT, next_effect
from pipeline.reducers import fold, reduce
from tests.support import budget, scripted_run

L, OK = AgentOutcome.PROVIDER_LIMITED, AgentOutcome.SUCCESS
SOON, FAR = timedelta(minutes=5), timedelta(days=6)


def _planners(result: object) -> list[str]:
    from pipeline.events import InvocationStarted

    events = result.events  # type: ignore[attr-defined]
    return [e.agent for e in events if isinstance(e, InvocationStarted) and e.role is Role.PLANNER]


def _limited(result: object) -> list[ProviderLimited]:
    return [e for e in result.events if isinstance(e, ProviderLimited)]  # type: ignore[attr-defined]


def test_a_limit_with_a_reset_is_waited_out_and_the_same_agent_goes_on() -> None:
    result = scripted_run({"planner outcome": [L, OK], "limit reset": [SOON]})
    (limited,) = _limited(result)
    waits = [e for e in result.effects if isinstance(e, WaitForLimitReset)]
    assert [(w.role, w.until) for w in waits] == [(Role.PLANNER, limited.resets_at)]
    awaited = [e for e in result.events if isinstance(e, LimitResetAwaited)]
    assert [a.until for a in awaited] == [limited.resets_at]
    assert _planners(result) == ["claude", "claude"]
    assert result.state.termination is TerminationReason.COMPLETED
    assert result.state.ledger.anomalies == 0


def test_a_limit_with_no_reset_told_is_retried_after_a_backoff() -> None:
    result = scripted_run({"planner outcome": [L, OK], "limit reset": [None]})
    assert any(isinstance(e, BackOff) for e in result.effects)
    assert not any(isinstance(e, WaitForLimitReset) for e in result.effects)
    assert _planners(result) == ["claude", "claude"]
    assert result.state.termination is TerminationReason.COMPLETED


def test_a_reset_past_the_longest_wait_stops_the_run_for_a_person_resumably() -> None:
    result = scripted_run({"planner outcome": [L], "limit reset": [FAR]})
    state = result.state
    assert state.phase is Phase.INTERRUPTED
    assert state.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED
    asked = [e for e in result.effects if isinstance(e, RequireHuman)]
    assert [a.reason for a in asked] == [PROVIDER_LIMIT]
    assert "resets at" in asked[0].detail
    assert "ralph resume once it has reset" in asked[0].detail
    assert not any(isinstance(e, WaitForLimitReset) for e in result.effects)
    assert state.ledger.anomalies == 0
    # Resumed, the same agent tries again from its prompt: the stop is over.
    assert state.progress.resume is not None
    resumed = reduce(state, RunResumed(checkpoint_sequence=None, at=result.events[-1].at))
    assert resumed.agent.limit_until is None
    assert resumed.agent.chain_position == 0


def test_stop_stops_even_for_a_reset_minutes_away() -> None:
    stop = LimitPolicy(on_usage_limit=OnUsageLimit.STOP)
    result = scripted_run({"planner outcome": [L], "limit reset": [SOON]}, limits=stop)
    assert result.state.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED


def test_fallback_moves_to_the_next_agent_at_once_and_waits_when_none_is_left() -> None:
    fallback = LimitPolicy(on_usage_limit=OnUsageLimit.FALLBACK)
    result = scripted_run(
        {"planner outcome": [L, L, OK], "limit reset": [SOON, SOON]}, limits=fallback
    )
    assert _planners(result) == ["claude", "codex", "codex"]
    waits = [e for e in result.effects if isinstance(e, WaitForLimitReset)]
    assert len(waits) == 1  # only for the last agent of the chain
    assert result.state.termination is TerminationReason.COMPLETED


def test_each_wait_is_one_of_the_agents_retries_so_endless_limits_end() -> None:
    """Two retries: two waits, then the third limit stops the run for a person."""
    outcomes = {"planner outcome": [L, L, L], "limit reset": [SOON, SOON, SOON]}
    result = scripted_run(outcomes, budget_=budget(max_retries_per_agent=2))
    assert len([e for e in result.effects if isinstance(e, WaitForLimitReset)]) == 2
    assert result.state.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED


def test_a_shorter_longest_wait_stops_for_a_five_minute_reset() -> None:
    short = LimitPolicy(max_wait_s=Count(60))
    result = scripted_run({"planner outcome": [L], "limit reset": [SOON]}, limits=short)
    assert result.state.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED


def test_the_wait_is_durable_a_replay_of_the_log_waits_until_the_same_moment() -> None:
    """Cut the log at the wait (a kill -9 there): the folded state asks for the same deadline,
    however much later the run is resumed."""
    result = scripted_run({"planner outcome": [L, OK], "limit reset": [SOON]})
    events = list(result.events)
    (limited,) = _limited(result)
    cut = next(i for i, e in enumerate(events) if isinstance(e, LimitResetAwaited))
    state = fold(events[:cut])
    effect = next_effect(state)
    assert isinstance(effect, WaitForLimitReset)
    assert effect.until == limited.resets_at
    later = reduce(state, RunResumed(checkpoint_sequence=None, at=limited.at + timedelta(hours=3)))
    again = next_effect(later)
    assert isinstance(again, WaitForLimitReset)
    assert again.until == limited.resets_at


def test_an_interruption_during_the_wait_keeps_its_deadline_for_the_resume() -> None:
    """SIGINT (or a worker handing the run back) during the wait: the resumed run waits on
    until the same moment instead of trying the agent at once."""
    from pipeline.core.effects import SaveCheckpoint
    from pipeline.events import CheckpointSaved, LogPosition, RunInterrupted

    result = scripted_run({"planner outcome": [L, OK], "limit reset": [SOON]})
    events = list(result.events)
    (limited,) = _limited(result)
    cut = next(i for i, e in enumerate(events) if isinstance(e, LimitResetAwaited))
    stopped = reduce(fold(events[:cut]), RunInterrupted(reason="SIGINT", at=limited.at))
    assert stopped.phase is Phase.INTERRUPTED
    saving = next_effect(stopped)  # the runner saves the interruption's checkpoint first
    assert isinstance(saving, SaveCheckpoint)
    saved = CheckpointSaved(
        trigger=saving.trigger, sequence=LogPosition(saving.sequence), at=limited.at
    )
    resumed = reduce(reduce(stopped, saved), RunResumed(checkpoint_sequence=None, at=limited.at))
    effect = next_effect(resumed)
    assert isinstance(effect, WaitForLimitReset)
    assert effect.until == limited.resets_at


def test_a_window_past_stop_at_utilization_stops_the_run_before_its_next_agent() -> None:
    """The planner's provider reports its five-hour window 95% full: with
    ``stop_at_utilization = 0.9`` the run asks for a person before the next agent starts;
    resumed, it goes on (the person waited for the reset)."""
    import attrs

    from pipeline.core.effects import InvokeAgent
    from pipeline.engine.simulation import (
        ScriptedChooser,
        SimulatedWorld,
        WorldConfig,
        default_chains,
        simulated_policy,
    )
    from pipeline.events import HumanInterventionRequired, PlanProduced, UsageWindowReported
    from pipeline.handlers import facts_of

    policy = LimitPolicy(stop_at_utilization=0.9)
    result = scripted_run(limits=policy)
    events = list(result.events)
    planned = next(i for i, e in enumerate(events) if isinstance(e, PlanProduced))
    at = events[planned].at
    full = UsageWindowReported(
        role=Role.PLANNER,
        agent=AgentName("claude"),
        window="five_hour",
        utilization=0.95,
        resets_at=None,
        at=at,
    )
    state = reduce(fold(events[: planned + 1]), full)
    loop = attrs.evolve(simulated_policy(), required_events=(), limits=policy)
    config = WorldConfig(
        budget=budget(), chains=default_chains(("claude", "codex")), rebase_onto=None, loop=loop
    )
    world = SimulatedWorld(config=config, chooser=ScriptedChooser(answers={}))
    effect = next_effect(state)
    while not isinstance(effect, InvokeAgent | RequireHuman):
        for fact in facts_of(world(effect)):
            state = reduce(state, fact)
        effect = next_effect(state)
    assert isinstance(effect, RequireHuman)
    assert effect.reason == PROVIDER_LIMIT
    assert "five_hour window 95% full" in effect.detail
    stopped = reduce(
        state, HumanInterventionRequired(reason=effect.reason, detail=effect.detail, at=at)
    )
    assert stopped.termination is TerminationReason.HUMAN_INTERVENTION_REQUIRED
    assert stopped.ledger.window_full is None
    # Below the share, the same report changes nothing.
    below = UsageWindowReported(
        role=Role.PLANNER,
        agent=AgentName("claude"),
        window="five_hour",
        utilization=0.5,
        resets_at=None,
        at=at,
    )
    assert reduce(fold(events[: planned + 1]), below).ledger.window_full is None
