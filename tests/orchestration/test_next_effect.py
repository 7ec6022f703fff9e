"""``next_effect`` is total, pure and consistent with what the reducers expect."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import events, reachable_states, simulated_runs
from pipeline.core.effects import (
    EFFECT_TAGS,
    CreateCommit,
    Effect,
    MaterializePrompt,
    StartRun,
    Terminate,
)
from pipeline.core.state import PipelineState, is_complete
from pipeline.events import CommitCreated, PipelineEvent, UsageReported
from pipeline.orchestration import effect_id, next_effect
from pipeline.reducers import fold, reduce
from tests.support import WHOLE_RUNS


@WHOLE_RUNS
@given(reachable_states())
def test_next_effect_is_defined_deterministic_and_pure_on_every_reachable_state(
    state: PipelineState,
) -> None:
    """Every reachable state yields exactly one effect of the closed union; the same state
    gives the same effect (with the same id) and is not mutated; and the loop never stops
    early: Terminate means the run is complete. One test draws the states for all of them:
    drawing a reachable state is a whole simulated run."""
    before = copy.deepcopy(state)
    first: Effect = next_effect(state)
    assert type(first) in EFFECT_TAGS
    assert next_effect(state) == first
    assert state == before
    assert first.effect_id == effect_id(state)
    if isinstance(first, Terminate):
        assert is_complete(state)


@given(st.lists(events(), max_size=20))
def test_next_effect_is_total_even_on_states_folded_from_nonsense(
    log: list[PipelineEvent],
) -> None:
    """States built from arbitrary facts still get an effect; nothing raises."""
    assert type(next_effect(fold(log))) in EFFECT_TAGS


def test_a_fresh_state_asks_to_start_the_run() -> None:
    """Before any fact, the only thing to do is to start the run."""
    assert isinstance(next_effect(PipelineState()), StartRun)


@WHOLE_RUNS
@given(simulated_runs())
def test_a_commit_carries_the_usage_of_the_invocations_since_the_last_commit(
    run: tuple[object, tuple[PipelineEvent, ...], object],
) -> None:
    """Each ``CreateCommit`` asked for along a run carries what the usage facts since the
    last ``CommitCreated`` say: their count, known cost, unknown costs, tokens and models in
    the order first seen. Its trailers are these figures, so they must match the log."""
    _config, log, _final = run
    state = PipelineState()
    since: list[UsageReported] = []
    commits = 0
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, CreateCommit):
            commits += 1
            assert effect.spent.invocations == len(since)
            assert effect.spent.cost_usd == pytest.approx(sum(u.cost_usd or 0 for u in since))
            assert effect.spent.unknown_cost == sum(u.cost_usd is None for u in since)
            assert effect.spent.tokens == sum(u.tokens for u in since)
            assert effect.models == tuple(dict.fromkeys(u.model or "" for u in since))
        if isinstance(event, UsageReported):
            since.append(event)
        elif isinstance(event, CommitCreated):
            since = []
        state = reduce(state, event)


@WHOLE_RUNS
@given(simulated_runs())
def test_standing_is_the_states_budget_and_spend(
    run: tuple[object, tuple[PipelineEvent, ...], object],
) -> None:
    """Each prompt asked for along a run carries, for its MCP card, where the run stands as
    ``ralph status`` tells it (phase, step, counts against the budget, the known spend and
    whether some is unknown), and its publishing names the run's cancellation promise."""
    _config, log, _final = run
    state = PipelineState()
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, MaterializePrompt):
            assert state.run is not None
            budget, progress, spent = state.run.budget, state.progress, state.ledger.spend.total
            standing = effect.standing
            assert standing is not None
            assert (standing.phase, standing.step) == (progress.phase.value, progress.step.value)
            assert (standing.iteration, standing.max_iterations) == (
                progress.iteration,
                budget.max_iterations,
            )
            assert standing.review_pass == progress.review_pass
            topology = state.run.loop.topology is not None
            assert standing.max_review_passes == (None if topology else budget.max_review_passes)
            assert standing.cost_usd == pytest.approx(spent.cost_usd)
            assert standing.max_cost_usd == budget.max_cost_usd
            assert standing.unknown_cost == (spent.unknown_cost > 0)
            if effect.publishing is not None:
                cancel = state.run.loop.cancellation_promise
                assert effect.publishing.cancellation_promise == cancel
        state = reduce(state, event)
