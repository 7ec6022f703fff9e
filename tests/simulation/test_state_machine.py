"""A stateful test: the loop driven by a simulated world, with arbitrary facts injected.

Invariants: the fold of the log equals the incremental state; replay from any prefix equals the
full fold; terminal states absorb (a complete run stays complete, an interrupted one leaves only
by resumption); once terminal, orchestration asks only for the hooks watching what stopped it,
its checkpoint or termination.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from pipeline.app.testing import HypothesisChooser, events, world_configs
from pipeline.core.effects import SaveCheckpoint, Terminate
from pipeline.core.state import Phase, PipelineState, is_complete, is_terminal
from pipeline.engine.simulation import SimulatedWorld, WorldConfig, fake_clock
from pipeline.events import CheckpointSaved, LogPosition, PipelineEvent, RunAbandoned, RunResumed
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from tests.simulation.invariants import check_state, watches
from tests.support import WHOLE_RUNS


class PipelineMachine(RuleBasedStateMachine):
    """Drives ``next_effect -> simulated handler -> reduce`` and injects outside facts."""

    def __init__(self) -> None:
        super().__init__()
        self.state = PipelineState()
        self.log: list[PipelineEvent] = []
        self.config: WorldConfig | None = None
        self.clock = fake_clock()

    @initialize(config=world_configs())
    def configure(self, config: WorldConfig) -> None:
        self.config = config

    def _apply(self, event: PipelineEvent) -> None:
        before = self.state
        after = reduce(before, event)
        if before.phase is Phase.COMPLETE:
            assert after.phase is Phase.COMPLETE, "a complete run was revived"
        if before.phase is Phase.INTERRUPTED and not isinstance(event, RunResumed | RunAbandoned):
            # A person ends an interrupted run for good with ``ralph abandon``.
            assert after.phase is Phase.INTERRUPTED, "an interrupted run left without resuming"
        self.state = after
        self.log.append(event)

    @precondition(lambda self: not isinstance(next_effect(self.state), Terminate))
    @rule(data=st.data())
    def take_the_next_effect(self, data: st.DataObject) -> None:
        assert self.config is not None
        effect = next_effect(self.state)
        if is_terminal(self.state):
            assert isinstance(effect, SaveCheckpoint) or watches(effect)
        if isinstance(effect, SaveCheckpoint):
            # The runner saves checkpoints itself, never a handler.
            saved = CheckpointSaved(
                trigger=effect.trigger, sequence=LogPosition(self.state.sequence), at=self.clock()
            )
            self._apply(saved)
            return
        world = SimulatedWorld(
            config=self.config, chooser=HypothesisChooser(data.draw), clock=self.clock
        )
        for event in world(effect):
            self._apply(event)

    @rule(event=events())
    def inject_an_outside_fact(self, event: PipelineEvent) -> None:
        self._apply(event)

    @rule(data=st.data())
    def replay_from_a_prefix(self, data: st.DataObject) -> None:
        cut = data.draw(st.integers(0, len(self.log)), label="prefix")
        assert fold(self.log[cut:], fold(self.log[:cut])) == self.state

    @invariant()
    def fold_of_the_log_is_the_state(self) -> None:
        assert fold(self.log) == self.state

    @invariant()
    def counters_stay_within_budgets(self) -> None:
        check_state(self.state)

    @invariant()
    def a_complete_run_asks_only_for_its_watching_hooks_then_to_terminate(self) -> None:
        if is_complete(self.state):
            effect = next_effect(self.state)
            assert isinstance(effect, Terminate) or watches(effect)


TestPipelineMachine = PipelineMachine.TestCase
TestPipelineMachine.settings = WHOLE_RUNS
