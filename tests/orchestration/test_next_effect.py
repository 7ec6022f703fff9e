"""``next_effect`` is total, pure and consistent with what the reducers expect."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from pipeline.effects import EFFECT_TAGS, Effect, StartRun, Terminate
from pipeline.events import PipelineEvent
from pipeline.orchestration import effect_id, next_effect
from pipeline.reducers import fold
from pipeline.state import PipelineState, is_complete
from pipeline.testing import events, reachable_states


@given(reachable_states())
def test_next_effect_is_defined_for_every_reachable_state(state: PipelineState) -> None:
    """Every reachable state yields exactly one effect of the closed union."""
    effect = next_effect(state)
    assert type(effect) in EFFECT_TAGS


@given(st.lists(events(), max_size=20))
def test_next_effect_is_total_even_on_states_folded_from_nonsense(
    log: list[PipelineEvent],
) -> None:
    """States built from arbitrary facts still get an effect; nothing raises."""
    assert type(next_effect(fold(log))) in EFFECT_TAGS


@given(reachable_states())
def test_next_effect_is_deterministic_and_leaves_the_state_untouched(
    state: PipelineState,
) -> None:
    """Same state, same effect (with the same id); the state is not mutated."""
    before = copy.deepcopy(state)
    first: Effect = next_effect(state)
    assert next_effect(state) == first
    assert state == before
    assert first.effect_id == effect_id(state)


def test_a_fresh_state_asks_to_start_the_run() -> None:
    """Before any fact, the only thing to do is to start the run."""
    assert isinstance(next_effect(PipelineState()), StartRun)


@given(reachable_states())
def test_terminate_is_asked_for_only_when_the_run_is_complete(state: PipelineState) -> None:
    """The loop never stops early: Terminate means the run is complete."""
    if isinstance(next_effect(state), Terminate):
        assert is_complete(state)
