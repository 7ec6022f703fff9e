"""Gates at final validation, as examples of each action and as a hypothesis law: no run
completes while a gate that blocks or stops has failed in its last round."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import TypeVar

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import HypothesisChooser, gate_specs, world_configs
from pipeline.core.effects import MaterializePrompt, RunGate
from pipeline.core.state import PipelineState, is_complete
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    Count,
    GateAction,
    GateBoundary,
    GateFinished,
    GateSpec,
    GateStarted,
    GateStatus,
    LoopPolicy,
    PipelineEvent,
    RunCompleted,
    TerminationReason,
)
from pipeline.orchestration import next_effect, step_bound
from pipeline.reducers import fold, reduce
from pipeline.reducers._gates import restored_named
from tests.support import WHOLE_RUNS, budget

T = TypeVar("T")


def gate(name: str, action: GateAction = GateAction.BLOCK, *on: GateBoundary) -> GateSpec:
    """A gate for examples (``on``: final by default)."""
    return GateSpec(
        name=name,
        argv=("check", name),
        timeout_s=Count(60),
        on=on or (GateBoundary.FINAL,),
        on_failure=action,
    )


def run_with(
    gates: Sequence[GateSpec], statuses: Sequence[GateStatus], iterations: int = 3
) -> tuple[PipelineEvent, ...]:
    """A smooth simulated run with ``gates``, whose gates end as ``statuses`` says, in turn
    (passing once used up)."""
    # No required event: a smooth run completes, so what the gates do is all that differs.
    loop = attrs.evolve(simulated_policy(), required_events=(), gates=tuple(gates))
    config = WorldConfig(
        budget=budget(max_iterations=iterations), chains=default_chains(("a",)), loop=loop
    )
    chooser = ScriptedChooser(answers={"gate status": list(statuses)})
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=chooser, clock=clock)
    bound = step_bound(config.budget, config.chains, loop)
    return run_in_memory(world, options=RunOptions(max_effects=bound, clock=clock)).events


def finished(log: Sequence[PipelineEvent]) -> list[tuple[str, GateStatus]]:
    """Every gate that ran, in order, and how it ended."""
    return [(e.gate, e.status) for e in log if isinstance(e, GateFinished)]


def ended(log: Sequence[PipelineEvent]) -> TerminationReason:
    (completed,) = [e for e in log if isinstance(e, RunCompleted)]
    return completed.reason


def test_without_gates_final_validation_is_as_before() -> None:
    log = run_with((), ())
    assert finished(log) == []
    assert ended(log) is TerminationReason.COMPLETED


def test_a_blocking_gate_sends_the_work_back_until_it_passes() -> None:
    """tests fails once: the developer's next prompt carries a build.blocked notice with the
    gate's output, development goes on, and the next round passes: completed."""
    log = run_with((gate("tests"), gate("lint")), (GateStatus.FAILED,))
    assert finished(log) == [
        ("tests", GateStatus.FAILED),
        ("lint", GateStatus.PASSED),  # the round runs every gate before it resolves
        ("tests", GateStatus.PASSED),
        ("lint", GateStatus.PASSED),
    ]
    assert ended(log) is TerminationReason.COMPLETED
    state = PipelineState()
    prompts: list[MaterializePrompt] = []
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, MaterializePrompt) and state.gating.blocked:
            prompts.append(effect)
        state = reduce(state, event)
    blocked = [n for n in prompts[0].notices if n.topic == "build.blocked"]
    assert len(blocked) == 1
    assert "Gate 'tests' failed: `check tests` exited with status 1" in blocked[0].text
    assert "1 failed, 3 passed" in blocked[0].text  # the end of its output
    assert state.gating.blocked == 1


def test_a_gate_that_never_passes_ends_the_run_out_of_iterations_never_completed() -> None:
    log = run_with((gate("tests"),), [GateStatus.FAILED] * 10, iterations=2)
    assert ended(log) is TerminationReason.MAX_ITERATIONS
    assert all(status is GateStatus.FAILED for _gate, status in finished(log))


def test_a_warning_gate_tells_the_agent_and_lets_the_run_complete() -> None:
    log = run_with((gate("style", GateAction.WARN),), (GateStatus.FAILED,))
    final = fold(log)
    assert ended(log) is TerminationReason.COMPLETED
    assert final.gating.warned == 1
    assert "ralph.gate_warning" in final.intake.seen_topics


def test_a_stopping_gate_ends_the_run_at_once_as_gate_failed() -> None:
    """secrets stops: the gate after it never runs, and the run ends gate_failed (exit 1)."""
    log = run_with((gate("secrets", GateAction.STOP), gate("tests")), (GateStatus.TIMED_OUT,))
    assert finished(log) == [("secrets", GateStatus.TIMED_OUT)]
    assert ended(log) is TerminationReason.GATE_FAILED
    assert TerminationReason.GATE_FAILED.exit_code == 1
    final = fold(log)
    assert final.ledger.last_error is not None
    assert "timed out" in final.ledger.last_error


def test_a_completion_gate_runs_only_when_a_completion_was_claimed() -> None:
    """The smooth world's developer reports completed without claiming the promise: a
    completion gate does not run, a final one does."""
    log = run_with((gate("claimed", GateAction.BLOCK, GateBoundary.COMPLETION), gate("f")), ())
    assert finished(log) == [("f", GateStatus.PASSED)]


def test_orchestration_runs_the_recorded_gate_whatever_the_configuration_says_now() -> None:
    """The effect carries the argv the run recorded (RunStarted): an edited ralph.toml
    changes nothing for a run under way."""
    log = run_with((gate("tests"),), ())
    state = PipelineState()
    effects: list[RunGate] = []
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, RunGate) and isinstance(event, GateStarted):
            effects.append(effect)
        state = reduce(state, event)
    (asked,) = effects
    assert asked.argv == ("check", "tests")
    assert asked.boundary is GateBoundary.FINAL


class _FailingGates(HypothesisChooser):
    """Hypothesis's choices, with a gate's outcome drawn evenly (the happy-path bias would
    make a failed gate at the end of a run rare)."""

    def __init__(self, draw: st.DrawFn) -> None:
        super().__init__(draw)
        self._drawing = draw

    def pick(self, options: Sequence[T], what: str) -> T:
        if what == "gate status":
            return self._drawing(st.sampled_from(options), label=what)
        return super().pick(options, what)


@WHOLE_RUNS
@given(config=world_configs(), gates=gate_specs(), data=st.data())
def test_no_run_completes_while_a_gate_that_blocks_or_stops_last_failed(
    config: WorldConfig, gates: tuple[GateSpec, ...], data: st.DataObject
) -> None:
    """Whatever the world and the gates: a run that completes had every blocking or stopping
    gate of its final round pass last; every run ends within its step bound with no anomaly."""
    # Without required events more runs get to complete, where the law has something to say.
    loop: LoopPolicy = attrs.evolve(config.loop, gates=gates, required_events=())
    config = attrs.evolve(config, loop=loop)
    world = SimulatedWorld(config=config, chooser=_FailingGates(data.draw))
    result = run_in_memory(
        world, options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop))
    )
    assert is_complete(result.state)
    assert result.state.ledger.anomalies == 0, result.state.ledger.last_anomaly
    if result.state.termination is not TerminationReason.COMPLETED:
        return
    last: dict[str, GateStatus] = {}
    for event in result.events:
        if isinstance(event, GateFinished):
            last[event.gate] = event.status
    for spec in gates:
        if spec.on_failure is not GateAction.WARN and GateBoundary.FINAL in spec.on:
            assert last.get(spec.name) is GateStatus.PASSED, (spec.name, last)


def test_in_a_topology_a_block_wakes_the_hat_that_worked_last() -> None:
    """The critic's LOOP_COMPLETE is accepted, the gate fails at final validation: the critic
    works again, woken by build.blocked, and completes once the gate passes."""
    from tests.reducers.test_topologies import activated, hat, policy
    from tests.reducers.test_topologies import run_log as topology_log

    loop = attrs.evolve(
        policy(
            hat("builder", ["task.start"], ["review.ready"]),
            hat("critic", ["review.ready"], ["LOOP_COMPLETE"]),
        ),
        gates=(gate("tests"),),
    )
    says = {"builder": [["review.ready"]], "critic": [["LOOP_COMPLETE"], ["LOOP_COMPLETE"]]}
    # The gate fails the first time, then passes.
    log = topology_log(loop, says, answers={"gate status": [GateStatus.FAILED]})
    assert activated(log) == [
        ("builder", "task.start"),
        ("critic", "review.ready"),
        ("critic", "build.blocked"),
    ]
    assert ended(log) is TerminationReason.COMPLETED


def test_a_topic_gate_holds_its_topic_so_the_next_hat_never_sees_a_refused_claim() -> None:
    """`on = topic:review.ready`: the builder's review.ready runs the gate after its
    activation. It fails: the topic is dropped (and named), the builder works again, woken by
    build.blocked; its second review.ready passes and only then wakes the critic."""
    from tests.reducers.test_topologies import activated, hat, policy
    from tests.reducers.test_topologies import run_log as topology_log

    spec = GateSpec(
        name="tests",
        argv=("check",),
        timeout_s=Count(60),
        on=(GateBoundary.TOPIC,),
        topics=("review.ready",),
    )
    loop = attrs.evolve(
        policy(
            hat("builder", ["task.start", "build.blocked"], ["review.ready"]),
            hat("critic", ["review.ready"], ["LOOP_COMPLETE"]),
        ),
        gates=(spec,),
    )
    says = {"builder": [["review.ready"], ["review.ready"]], "critic": [["LOOP_COMPLETE"]]}
    log = topology_log(loop, says, answers={"gate status": [GateStatus.FAILED]})
    assert activated(log) == [
        ("builder", "task.start"),
        ("builder", "build.blocked"),
        ("critic", "review.ready"),
    ]
    ran = [(e.boundary, e.status) for e in log if isinstance(e, GateFinished)]
    assert ran == [(GateBoundary.TOPIC, GateStatus.FAILED), (GateBoundary.TOPIC, GateStatus.PASSED)]
    assert ended(log) is TerminationReason.COMPLETED
    assert fold(log).routing.pending == ()
    blocked_at = next(i for i, e in enumerate(log) if isinstance(e, GateFinished))
    told = [n.text for n in fold(log[: blocked_at + 1]).intake.notices]
    assert "Not acted on, since the work was blocked: review.ready" in told


def test_a_topic_gate_is_not_run_for_an_activation_that_published_no_matching_topic() -> None:
    from tests.reducers.test_topologies import hat, policy
    from tests.reducers.test_topologies import run_log as topology_log

    spec = GateSpec(
        name="tests",
        argv=("check",),
        timeout_s=Count(60),
        on=(GateBoundary.TOPIC,),
        topics=("deploy.*",),
    )
    loop = attrs.evolve(policy(hat("builder", ["task.start"], ["LOOP_COMPLETE"])), gates=(spec,))
    log = topology_log(loop, {"builder": [["LOOP_COMPLETE"]]})
    assert finished(log) == []
    assert ended(log) is TerminationReason.COMPLETED


def test_a_pinned_failure_names_eight_restored_files_and_counts_the_rest() -> None:
    """A run's gate and a landing's name the files a pinned gate took from the base alike:
    the first eight, then how many more."""
    files = tuple(f"tests/test_{n}.py" for n in range(10))
    assert restored_named(files[:8]) == ", ".join(files[:8])
    assert restored_named(files) == ", ".join(files[:8]) + " and 2 more"
