"""The spend ledger and its limits: usage facts are summed in all, per role, agent and model,
and a spent limit ends the run as ``max_cost`` where the next agent would start, never in the
middle of an invocation. Examples through the real loop, and the laws over simulated runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs
from hypothesis import given

from pipeline.app.testing import simulated_runs
from pipeline.core.state import Phase, PipelineState, TerminationReason
from pipeline.engine.simulation import USAGE_CHOICE, USAGE_UNIT_USD, Always
from pipeline.events import (
    Count,
    InvocationStarted,
    PipelineEvent,
    Role,
    RunInterrupted,
    RunResumed,
    RunStarted,
    UsageReported,
    Usd,
)
from pipeline.reducers import fold, reduce
from pipeline.reducers._spend import spent_budget
from tests.support import WHOLE_RUNS, budget, scripted_run


def _spending(units: int, **limits: object) -> object:
    """A run where every invocation reports ``units`` of usage, under ``limits``."""
    return scripted_run(
        {USAGE_CHOICE: [Always(units)]},
        budget_=attrs.evolve(budget(), **limits),  # type: ignore[misc]
    )


def _starts(events: Sequence[PipelineEvent]) -> list[Role]:
    return [e.role for e in events if isinstance(e, InvocationStarted)]


def test_a_run_within_its_cost_budget_completes_and_keeps_its_ledger() -> None:
    """Every invocation reports $0.25 and 1,100 tokens; the ledger adds them up by role, agent
    and model, and a budget larger than the run's spend changes nothing."""
    result = _spending(1, max_cost_usd=Usd(100.0))
    state = result.state
    assert state.termination is TerminationReason.COMPLETED
    usage = [e for e in result.events if isinstance(e, UsageReported)]
    spend = state.ledger.spend
    assert spend.total.invocations == len(usage) == len(_starts(result.events))
    assert math.isclose(spend.total.cost_usd, len(usage) * USAGE_UNIT_USD)
    assert spend.total.tokens == len(usage) * 1_100
    assert sum(line.invocations for line in spend.by_role.values()) == len(usage)
    assert spend.by_role[Role.PLANNER].invocations == 1
    assert set(spend.by_agent) == {"claude"}
    assert set(spend.by_model) == {"simulated"}


def test_a_spent_cost_budget_ends_the_run_before_the_next_agent_starts() -> None:
    """$0.50 per invocation and a $1.00 budget: planner and developer spend it, the committer
    never starts, and the run ends as max_cost (exit 2) saying what was spent."""
    result = _spending(2, max_cost_usd=Usd(1.0))
    state = result.state
    assert state.termination is TerminationReason.MAX_COST
    assert state.termination.exit_code == 2
    assert _starts(result.events) == [Role.PLANNER, Role.DEVELOPER]
    assert "spent $1.0000 of max_cost_usd = $1.0000" in (state.ledger.last_error or "")


def test_an_invocation_under_way_is_never_cut_short_by_the_budget() -> None:
    """The planner alone overspends a $0.10 budget; its plan is still recorded before the
    run ends, because the limit is checked only where an agent would start."""
    result = _spending(4, max_cost_usd=Usd(0.1))
    assert result.state.termination is TerminationReason.MAX_COST
    assert _starts(result.events) == [Role.PLANNER]
    assert result.state.ledger.plan_digest is not None


def test_a_token_budget_ends_the_run_like_a_cost_budget() -> None:
    """1,100 tokens per invocation and a 2,000-token budget: two invocations, then max_cost."""
    result = _spending(1, max_tokens=Count(2_000))
    assert result.state.termination is TerminationReason.MAX_COST
    assert _starts(result.events) == [Role.PLANNER, Role.DEVELOPER]
    assert "2200 tokens of max_tokens = 2000" in (result.state.ledger.last_error or "")


def test_a_role_budget_ends_the_run_when_that_role_has_spent_it() -> None:
    """The developer may spend $0.25: after its first invocation the run ends."""
    result = _spending(1, role_max_cost_usd=((Role.DEVELOPER, Usd(0.25)),))
    assert result.state.termination is TerminationReason.MAX_COST
    assert _starts(result.events) == [Role.PLANNER, Role.DEVELOPER]
    assert "the developer spent $0.2500" in (result.state.ledger.last_error or "")


def test_the_breaker_trips_when_money_is_spent_without_a_commit() -> None:
    """$0.25 per invocation and a $0.50 breaker: planner and developer spend it with nothing
    committed yet, so the committer never starts."""
    result = _spending(1, max_cost_without_progress_usd=Usd(0.5))
    assert result.state.termination is TerminationReason.MAX_COST
    assert _starts(result.events) == [Role.PLANNER, Role.DEVELOPER]
    assert "since the last commit with changes" in (result.state.ledger.last_error or "")


def test_a_provider_limit_after_the_spend_limit_ends_the_run_instead_of_waiting() -> None:
    """The planner spends the $0.25 breaker and is then limited by its provider with a reset
    five minutes away: the run ends as max_cost at once, never waiting to start the planner
    again (hypothesis found the wait starting it past the limit)."""
    from datetime import timedelta

    from pipeline.core.effects import WaitForLimitReset
    from pipeline.engine.simulation import AgentOutcome

    limited = AgentOutcome.PROVIDER_LIMITED
    result = scripted_run(
        {
            USAGE_CHOICE: [Always(1)],
            "planner outcome": [limited],
            "limit reset": [timedelta(minutes=5)],
        },
        budget_=attrs.evolve(budget(), max_cost_without_progress_usd=Usd(0.25)),
    )
    assert result.state.termination is TerminationReason.MAX_COST
    assert _starts(result.events) == [Role.PLANNER]
    assert not any(isinstance(e, WaitForLimitReset) for e in result.effects)
    assert _started_with_budget_left(result.events)


def test_a_commit_with_changes_resets_the_breaker() -> None:
    """A $0.60 breaker: the commit after $0.75 of work resets it, and the run completes having
    spent more than the breaker in all."""
    result = _spending(1, max_cost_without_progress_usd=Usd(0.6))
    state = result.state
    assert state.termination is TerminationReason.COMPLETED
    assert state.ledger.commits == 1
    assert state.ledger.spend.total.cost_usd > 0.6
    spend = state.ledger.spend
    # The breaker counts from the commit, made after three invocations.
    assert math.isclose(spend.total.cost_usd - spend.since_commit.cost_usd, 3 * USAGE_UNIT_USD)


def test_a_run_resumed_past_its_spend_limit_finalizes_from_where_it_stopped() -> None:
    """An interruption after the developer spent the $1.00 budget, then a resumption: the run
    finalizes as max_cost at once, from the resumed task (its iteration), with nothing of the
    interruption left in its progress (no resume point, no dev-fix task)."""
    result = _spending(2, max_cost_usd=Usd(1.0))
    last = max(i for i, e in enumerate(result.events) if isinstance(e, UsageReported))
    spent = fold(result.events[: last + 1])
    at = result.events[last].at
    stopped = reduce(spent, RunInterrupted(reason="SIGINT", at=at))
    assert stopped.progress.resume is not None
    resumed = reduce(stopped, RunResumed(checkpoint_sequence=None, at=at))
    progress = resumed.progress
    assert resumed.termination is TerminationReason.MAX_COST
    assert progress.phase is Phase.FINALIZING
    assert progress.resume is None
    assert progress.dev_fix is None
    assert progress.iteration == spent.progress.iteration
    assert "spend budget: spent $1.0000" in (resumed.ledger.last_error or "")


def _started_with_budget_left(log: Sequence[PipelineEvent]) -> bool:
    """Whether every agent started while no spend limit was reached."""
    state = PipelineState()
    for event in log:
        if isinstance(event, InvocationStarted):
            assert state.run is not None
            if spent_budget(state.run.budget, state.ledger.spend) is not None:
                return False
        state = reduce(state, event)
    return True


@WHOLE_RUNS
@given(simulated_runs())
def test_no_agent_starts_once_a_spend_limit_is_reached(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState],
) -> None:
    """Law: in any simulated run, whatever the agents report, an invocation starts only while
    every spend limit has room left; a run ended as max_cost had one reached. And the ledger
    is the sum of the usage facts (one test: drawing the runs is its cost)."""
    _ledger_is_the_sum_of_the_usage_facts(run)
    _config, log, final = run
    assert _started_with_budget_left(log)
    started = log[0]
    assert isinstance(started, RunStarted)
    if final.termination is TerminationReason.MAX_COST:
        assert spent_budget(started.budget, final.ledger.spend) is not None


def _ledger_is_the_sum_of_the_usage_facts(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState],
) -> None:
    """Law: the ledger's totals and its per-role lines are the sums of the usage facts."""
    _config, log, final = run
    usage = [e for e in log if isinstance(e, UsageReported)]
    spend = fold(log).ledger.spend
    assert spend == final.ledger.spend
    assert spend.total.invocations == len(usage)
    assert math.isclose(spend.total.cost_usd, sum(e.cost_usd or 0.0 for e in usage))
    assert spend.total.tokens == sum(e.tokens for e in usage)
    for role in Role:
        mine = [e for e in usage if e.role is role]
        line = spend.by_role.get(role)
        assert (line.invocations if line else 0) == len(mine)
