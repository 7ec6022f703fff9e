"""In every simulated world the run ends within its budgets, and the invariants always hold.

Hypothesis chooses every outcome: each agent invocation succeeds, fails retriably, fails fatally
or times out; plans are usable or not; reviews find issues or none; commits, rebases and
validations go either way.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pipeline.effects import SaveCheckpoint, Terminate
from pipeline.engine import run_in_memory
from pipeline.events import PipelineEvent
from pipeline.orchestration import next_effect, step_bound
from pipeline.reducers import reduce
from pipeline.simulation import SimulatedWorld, WorldConfig
from pipeline.state import PipelineState, is_complete, is_terminal
from pipeline.testing import HypothesisChooser, simulated_runs, world_configs
from tests.simulation.invariants import check_state, check_step

Run = tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState]


@given(world_configs(), st.data())
def test_every_run_terminates_within_the_bound_from_its_budgets(
    config: WorldConfig, data: st.DataObject
) -> None:
    """Whatever the world reports, the run completes within step_bound(budget) effects."""
    world = SimulatedWorld(config, HypothesisChooser(data.draw))
    bound = step_bound(config.budget, config.chains, config.loop)
    result = run_in_memory(world, max_effects=10 * bound)
    assert is_complete(result.state)
    assert isinstance(next_effect(result.state), Terminate)
    assert len(result.effects) <= bound


@given(simulated_runs())
def test_invariants_hold_at_every_step(run: Run) -> None:
    """Counters stay within budgets and only allowed phase transitions happen, event by event."""
    _config, log, _final = run
    state = PipelineState()
    for event in log:
        after = reduce(state, event)
        check_step(state, after)
        check_state(after)
        state = after


@given(simulated_runs())
def test_a_terminal_run_asks_for_nothing_but_its_checkpoint_and_termination(run: Run) -> None:
    """Once terminal, orchestration asks only to save the due checkpoint, then to terminate."""
    _config, log, _final = run
    state = PipelineState()
    for event in log:
        state = reduce(state, event)
        if is_terminal(state):
            effect = next_effect(state)
            assert isinstance(effect, SaveCheckpoint | Terminate)
            if is_complete(state):
                assert isinstance(effect, Terminate)
                assert effect.reason is state.termination
