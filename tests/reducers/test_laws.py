"""The laws every reducer obeys: total, deterministic, non-mutating, and replayable."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import events, reachable_states, simulated_runs
from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent
from pipeline.reducers import fold, reduce
from tests.support import WHOLE_RUNS


@WHOLE_RUNS
@given(reachable_states(), events())
def test_reduce_is_total_deterministic_and_leaves_its_input_untouched(
    state: PipelineState, event: PipelineEvent
) -> None:
    """Any event on any reachable state yields a state, one sequence step on, and nothing
    raises; the same state and event always give the same state; and neither is changed in
    place (in-place mutation slips past the other laws: a deep copy taken before catches
    it). One test draws the states for all three laws: drawing a reachable state is a whole
    simulated run."""
    before = copy.deepcopy(state)
    event_before = copy.deepcopy(event)
    after = reduce(state, event)
    assert isinstance(after, PipelineState)
    assert after.sequence == state.sequence + 1
    assert reduce(state, event) == after
    assert state == before
    assert event == event_before


@given(st.lists(events(), max_size=30))
def test_reduce_is_total_on_arbitrary_logs(log: list[PipelineEvent]) -> None:
    """Folding nonsense from a fresh state never raises; every event counts in the sequence."""
    assert fold(log).sequence == len(log)


@WHOLE_RUNS
@given(simulated_runs(), st.data())
def test_replay_from_any_prefix_equals_the_full_fold_and_a_consistent_world_has_no_anomaly(
    run: tuple[object, tuple[PipelineEvent, ...], PipelineState], data: st.DataObject
) -> None:
    """fold(tail, fold(head)) == fold(log) for every split: checkpoints can resume anywhere.
    And orchestration and reducers agree: facts reported for the effects asked never misfit
    (one test: drawing the runs is its cost)."""
    _config, log, final = run
    assert final.ledger.anomalies == 0, final.ledger.last_anomaly
    cut = data.draw(st.integers(0, len(log)), label="split")
    assert fold(log[cut:], fold(log[:cut])) == fold(log) == final
