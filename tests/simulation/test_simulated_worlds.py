"""In every simulated world the run ends within its budgets, and the invariants always hold.

Hypothesis chooses every outcome: each agent invocation succeeds, fails retriably, fails fatally
or times out; plans are usable or not; reviews find issues or none; commits, rebases and
validations go either way.
"""

from __future__ import annotations

from hypothesis import given

from pipeline.app.testing import simulated_runs
from pipeline.core.effects import SaveCheckpoint, Terminate
from pipeline.core.state import PipelineState, is_complete, is_terminal
from pipeline.engine.simulation import WorldConfig
from pipeline.events import PipelineEvent
from pipeline.orchestration import next_effect
from pipeline.reducers import reduce
from tests.simulation.invariants import check_state, check_step, watches
from tests.support import WHOLE_RUNS

Run = tuple[WorldConfig, tuple[PipelineEvent, ...], PipelineState]


@WHOLE_RUNS
@given(simulated_runs())
def test_every_run_ends_within_its_bound_and_the_invariants_hold_at_every_step(run: Run) -> None:
    """Whatever the world reports, the run completes within step_bound(budget) effects (the
    strategy runs it with that bound: one effect more raises); counters stay within budgets
    and only allowed phase transitions happen, event by event; once terminal, orchestration
    asks only to run the hooks watching what stopped it (an invocation, the run's end), to
    save the due checkpoint, then to terminate (one test: drawing the runs is its cost)."""
    _config, log, final = run
    assert is_complete(final)
    assert isinstance(next_effect(final), Terminate)
    state = PipelineState()
    for event in log:
        after = reduce(state, event)
        check_step(state, after)
        check_state(after)
        state = after
        if is_terminal(state):
            effect = next_effect(state)
            assert isinstance(effect, SaveCheckpoint | Terminate) or watches(effect)
            if is_complete(state) and not watches(effect):
                assert isinstance(effect, Terminate)
                assert effect.reason is state.termination
