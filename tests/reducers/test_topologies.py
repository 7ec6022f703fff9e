"""Topologies of the user's own: hats routed by topics, as readable examples of every routing
rule and as hypothesis laws over arbitrary topologies and arbitrary agent behaviour."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta

import attrs
from attrs import frozen
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.app.testing import HypothesisChooser, topics, topologies
from pipeline.core.effects import Effect, InvokeAgent, MaterializePrompt
from pipeline.core.state import PipelineState, TerminationReason, is_complete
from pipeline.engine import RunOptions, run_in_memory
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import (
    Count,
    DevelopmentIterationCompleted,
    EventsFileRead,
    ExitCode,
    HatActivated,
    InvocationStarted,
    InvocationSucceeded,
    IterationStatus,
    Json,
    LoopPolicy,
    Ordinal,
    PipelineEvent,
    PromptKind,
    Role,
    TopicPublished,
    Topology,
    UsageReported,
    WorkHat,
    in_scope,
    specificity,
)
from pipeline.events.values import CostSource, Digest, DurationMs, Usd
from pipeline.orchestration import step_bound
from pipeline.reducers import fold, reduce
from tests.support import budget


def hat(
    name: str, triggers: Sequence[str], publishes: Sequence[str] = (), **more: object
) -> WorkHat:
    """A topology hat for examples."""
    return WorkHat(name=name, triggers=tuple(triggers), publishes=tuple(publishes), **more)  # type: ignore[arg-type]


def policy(*hats: WorkHat, **loop: object) -> LoopPolicy:
    """The loop policy of a topology of ``hats`` starting with ``task.start``; no detector on,
    completion by ``LOOP_COMPLETE``; ``loop`` overrides the topology's or the policy's fields."""
    topology_fields = {
        k: v for k, v in loop.items() if k in ("starting_event", "coordinator", "commits")
    }
    policy_fields = {k: v for k, v in loop.items() if k not in topology_fields}
    topology = Topology(hats=hats, **topology_fields)  # type: ignore[arg-type]
    base = LoopPolicy(
        hats=(),
        enforce_hat_scope=False,
        completion_promise="LOOP_COMPLETE",
        cancellation_promise=None,
        required_events=(),
        stale_repeats=Count(0),
        max_task_blocks=Count(0),
        max_abandoned_tasks=Count(0),
        human_timeout_s=None,
        topology=topology,
    )
    return attrs.evolve(base, **policy_fields)  # type: ignore[misc]


@frozen
class HatScript:
    """A world whose hats publish what a script says: ``says[hat]`` lists, activation by
    activation, the topics the hat's agent publishes (nothing once used up). Every other
    effect is the simulated world's, going smoothly."""

    world: SimulatedWorld
    says: Mapping[str, list[list[str]]]
    cost_usd: float = 0.0
    """What each hat invocation reports having cost (0: it reports no usage)."""

    def __call__(self, effect: Effect) -> Sequence[PipelineEvent]:
        if not isinstance(effect, InvokeAgent) or effect.hat is None:
            return tuple(self.world(effect))
        now = self.world.clock
        said = self.says.get(effect.hat, [])
        published = said.pop(0) if said else []
        line = effect.events_lines
        facts: list[PipelineEvent] = [
            InvocationStarted(
                role=effect.role,
                agent=effect.agent,
                model=effect.model,
                attempt=effect.attempt,
                at=now(),
            ),
            *self._usage(effect),
            InvocationSucceeded(
                role=effect.role,
                agent=effect.agent,
                exit_code=ExitCode(0),
                duration_ms=DurationMs(1),
                output_digest=Digest("d"),
                at=now(),
            ),
        ]
        for name in published:
            line += 1
            facts.append(
                TopicPublished(
                    topic=name,
                    payload=Json.of(f"from {effect.hat}"),
                    line_number=Ordinal(line),
                    emitted_at=None,
                    at=now(),
                )
            )
        if published:
            facts.append(
                EventsFileRead(
                    offset=Count(effect.events_offset + 100 * len(published)),
                    lines=Count(line),
                    at=now(),
                )
            )
        done = DevelopmentIterationCompleted(
            iteration=Ordinal(effect.iteration),
            status=IterationStatus.COMPLETED,
            summary="hat finished",
            at=now(),
        )
        return (*facts, done)

    def _usage(self, effect: InvokeAgent) -> tuple[PipelineEvent, ...]:
        if not self.cost_usd:
            return ()
        return (
            UsageReported(
                role=effect.role,
                agent=effect.agent,
                model="m",
                input_tokens=Count(10),
                output_tokens=Count(1),
                cache_read_tokens=None,
                cache_write_tokens=None,
                turns=None,
                session_id=None,
                api_duration_ms=None,
                cost_usd=Usd(self.cost_usd),
                cost_source=CostSource.REPORTED,
                note="",
                at=self.world.clock(),
            ),
        )


def activated(state_events: Sequence[PipelineEvent]) -> list[tuple[str, str]]:
    """The (hat, topic) of every activation in ``state_events``, in order."""
    return [(e.hat, e.topic) for e in state_events if isinstance(e, HatActivated)]


def run_log(
    loop: LoopPolicy,
    says: Mapping[str, list[list[str]]],
    iterations: int = 6,
    *,
    cost_usd: float = 0.0,
    max_cost_usd: float | None = None,
    answers: dict[str, list[object]] | None = None,
) -> tuple[PipelineEvent, ...]:
    """The log of a whole run of ``loop`` whose hats say what ``says`` scripts (each hat
    invocation costing ``cost_usd``, within ``max_cost_usd``; the simulated world's other
    choices as ``answers`` script them)."""
    limit = None if max_cost_usd is None else Usd(max_cost_usd)
    spend = attrs.evolve(budget(max_iterations=iterations), max_cost_usd=limit)
    config = WorldConfig(budget=spend, chains=default_chains(("a",)), loop=loop)
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(answers=answers or {}), clock=clock
    )
    lines = {name: [list(t) for t in lists] for name, lists in says.items()}
    script = HatScript(world, lines, cost_usd)
    result = run_in_memory(
        script,
        options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop), clock=clock),
    )
    return result.events


# Routing, rule by rule


def test_the_starting_event_wakes_its_hat_and_topics_hand_the_work_on() -> None:
    """build.start wakes the builder, review.ready the critic, whose LOOP_COMPLETE ends it."""
    loop = policy(
        hat("builder", ["build.start", "review.rejected"], ["review.ready"]),
        hat("critic", ["review.ready"], ["review.passed", "review.rejected", "LOOP_COMPLETE"]),
        starting_event="build.start",
    )
    says = {
        "builder": [["review.ready"], ["review.ready"]],
        "critic": [["review.rejected"], ["LOOP_COMPLETE"]],
    }
    log = run_log(loop, says)
    assert activated(log) == [
        ("builder", "build.start"),
        ("critic", "review.ready"),
        ("builder", "review.rejected"),
        ("critic", "review.ready"),
    ]
    assert fold(log).termination is TerminationReason.COMPLETED


def test_the_most_specific_trigger_wins_then_the_hat_name() -> None:
    """build.done: the exact trigger beats build.* and **; among equals the first name."""
    topology = Topology(
        hats=(
            hat("zed", ["build.done"]),
            hat("any", ["*"]),
            hat("glob", ["build.*"]),
            hat("deep", ["build.**"]),
            hat("also", ["build.done"]),
        )
    )
    woken = topology.waking("build.done")
    assert woken is not None
    assert woken.name == "also"
    assert [specificity(p) for p in ("build.done", "build.*", "build.**", "*")] == [0, 1, 2, 3]
    partial = topology.waking("build.x")
    assert partial is not None
    assert partial.name == "glob"
    assert topology.waking("other") is not None
    assert topology.waking("other").name == "any"  # type: ignore[union-attr]


def test_the_oldest_waiting_topic_goes_first() -> None:
    """Two topics at once: the first published is taken first, the second next."""
    loop = policy(
        hat("lead", ["task.start"], ["a.go", "b.go"]),
        hat("a", ["a.go"]),
        hat("b", ["b.go"], ["LOOP_COMPLETE"]),
    )
    log = run_log(loop, {"lead": [["b.go", "a.go"]], "b": [[]], "a": [["LOOP_COMPLETE"]]})
    assert activated(log)[:3] == [("lead", "task.start"), ("b", "b.go"), ("a", "a.go")]


def test_a_topic_nobody_triggers_on_goes_to_the_coordinator() -> None:
    loop = policy(
        hat("lead", ["task.start"]),
        hat("boss", ["boss.only"]),
        coordinator="boss",
    )
    log = run_log(loop, {"lead": [["stray.topic"]], "boss": [["LOOP_COMPLETE"]]})
    assert activated(log) == [("lead", "task.start"), ("boss", "stray.topic")]


def test_without_a_coordinator_such_a_topic_is_dropped_and_said_so() -> None:
    """The stray topic is dropped with a notice, the next one still routes."""
    loop = policy(hat("lead", ["task.start", "again"]))
    state = fold(run_log(loop, {"lead": [["stray.topic", "again"], ["LOOP_COMPLETE"]]}))
    assert state.routing.dropped == 1
    assert state.termination is TerminationReason.COMPLETED
    assert "ralph.topic_dropped" in state.intake.seen_topics


def test_an_exhausted_hat_gets_nothing_more_and_its_exhaustion_is_published_once() -> None:
    """A hat past max_activations: its topic is dropped; <hat>.exhausted wakes an escalator."""
    loop = policy(
        hat("worker", ["task.start", "work"], max_activations=Count(2)),
        hat("escalator", ["worker.exhausted"]),
    )
    says = {"worker": [["work"], ["work"]], "escalator": [["work"], ["LOOP_COMPLETE"]]}
    log = run_log(loop, says, iterations=8)
    assert activated(log) == [
        ("worker", "task.start"),
        ("worker", "work"),
        ("escalator", "worker.exhausted"),
        # the escalator's "work" is dropped (worker exhausted), nothing else waits, and the
        # escalator has no default: the run stalls, having published the exhaustion only once
    ]
    final = fold(log)
    assert final.routing.exhausted == frozenset({"worker"})
    assert final.termination is TerminationReason.WORKFLOW_STALLED


def test_nothing_waiting_publishes_the_last_hats_default() -> None:
    loop = policy(
        hat("writer", ["task.start"], default_publishes="draft.ready"),
        hat("editor", ["draft.ready"]),
    )
    log = run_log(loop, {"writer": [[]], "editor": [["LOOP_COMPLETE"]]})
    assert activated(log) == [("writer", "task.start"), ("editor", "draft.ready")]
    assert fold(log).termination is TerminationReason.COMPLETED


def test_nothing_waiting_and_no_default_ends_the_run_as_stalled() -> None:
    loop = policy(hat("writer", ["task.start"]))
    final = fold(run_log(loop, {"writer": [[]]}))
    assert final.termination is TerminationReason.WORKFLOW_STALLED
    assert final.termination.exit_code == 1
    assert final.ledger.last_error is not None
    assert "writer" in final.ledger.last_error


def test_a_starting_event_nobody_triggers_on_stalls_at_once() -> None:
    final = fold(run_log(policy(hat("writer", ["other"])), {}))
    assert final.termination is TerminationReason.WORKFLOW_STALLED
    assert final.progress.iteration == 0


def test_the_completion_gate_holds_in_a_topology() -> None:
    """LOOP_COMPLETE before review.passed was seen is refused; after it, accepted."""
    loop = policy(
        hat(
            "builder",
            ["task.start", "task.resume", "retry"],
            ["LOOP_COMPLETE", "review.passed", "retry"],
        ),
        required_events=("review.passed",),
    )
    says = {"builder": [["LOOP_COMPLETE", "retry"], ["review.passed", "LOOP_COMPLETE"]]}
    final = fold(run_log(loop, says))
    assert final.intake.completion_refusals == 1
    assert final.termination is TerminationReason.COMPLETED


def test_a_spent_budget_ends_the_run_before_the_next_hat_is_woken() -> None:
    """The first activation spends the budget: the run ends max_cost, and no activation is
    counted for the hat that would have worked next."""
    # Without commits the next hat is routed right after the activation (a commit step in
    # between would end the run there first).
    loop = policy(hat("a", ["task.start"], ["go.b"]), hat("b", ["go.b"]), commits=False)
    log = run_log(loop, {"a": [["go.b"]]}, cost_usd=1.0, max_cost_usd=0.5)
    final = fold(log)
    assert final.termination is TerminationReason.MAX_COST
    assert activated(log) == [("a", "task.start")]
    assert final.routing.activations == (("a", 1),)
    assert [t.topic for t in final.routing.pending] == ["go.b"]


def test_a_read_only_topology_commits_nothing() -> None:
    """commits = false: no commit message is asked for, and the run completes all the same
    (nothing committed by design is not a run that did nothing)."""
    loop = policy(hat("reader", ["task.start", "more"]), commits=False)
    loop_commits = policy(hat("reader", ["task.start", "more"]))
    read_only = run_log(loop, {"reader": [["more"], ["LOOP_COMPLETE"]]})
    committing = run_log(loop_commits, {"reader": [["more"], ["LOOP_COMPLETE"]]})
    assert not any(type(e).__name__ == "CommitMessageGenerated" for e in read_only)
    assert fold(read_only).termination is TerminationReason.COMPLETED
    assert any(type(e).__name__ in ("CommitCreated", "CommitSkipped") for e in committing)


def test_out_of_scope_topics_wait_for_no_hat() -> None:
    """With scope enforced, a topic outside the hat's publishes is not acted on: not routed."""
    loop = policy(
        hat("lead", ["task.start"], ["ok.go"]),
        hat("sink", ["bad.go"], ["LOOP_COMPLETE"]),
        hat("good", ["ok.go"], ["LOOP_COMPLETE"]),
        enforce_hat_scope=True,
    )
    log = run_log(loop, {"lead": [["bad.go", "ok.go"]], "good": [["LOOP_COMPLETE"]]})
    assert activated(log) == [("lead", "task.start"), ("good", "ok.go")]
    assert fold(log).intake.scope_violations == 1


def test_a_hat_prompt_names_the_hat_and_the_topic_that_woke_it() -> None:
    """Orchestration asks for a HAT prompt carrying the hat, its trigger and its publishes."""
    from pipeline.orchestration import next_effect

    loop = policy(hat("builder", ["task.start"], ["review.ready"]))
    log = run_log(loop, {"builder": [["LOOP_COMPLETE"]]})
    state = PipelineState()
    prompts: list[MaterializePrompt] = []
    for event in log:
        effect = next_effect(state)
        if isinstance(effect, MaterializePrompt) and effect.kind is PromptKind.HAT:
            prompts.append(effect)
        from pipeline.reducers import reduce

        state = reduce(state, event)
    (prompt,) = prompts
    assert prompt.hat == "builder"
    assert prompt.trigger is not None
    assert prompt.trigger.topic == "task.start"
    assert prompt.publishing is not None
    assert prompt.publishing.publishes == ("review.ready",)


# Laws over arbitrary topologies and agents


def _says(draw: st.DrawFn, topology: Topology) -> dict[str, list[list[str]]]:
    """What every hat publishes, activation by activation: topics of the topology's alphabet
    (in or out of any scope), sometimes the promise, sometimes nothing."""
    topic = topics() | st.sampled_from(["LOOP_COMPLETE", topology.starting_event])
    return {h.name: draw(st.lists(st.lists(topic, max_size=3), max_size=4)) for h in topology.hats}


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_any_topology_routes_deterministically_within_its_hats_and_ends(
    data: st.DataObject,
) -> None:
    """Whatever the topology and whatever its agents publish: the run ends within its step
    bound; every activation is of one of the topology's hats, none past its limit; the same
    facts fold to the same state (routing is decided from the log alone), twice over."""
    topology = data.draw(topologies())
    loop = policy(
        *topology.hats,
        starting_event=topology.starting_event,
        coordinator=topology.coordinator,
        commits=topology.commits,
    )
    says = _says(data.draw, topology)
    log = run_log(loop, {k: [list(x) for x in v] for k, v in says.items()}, iterations=5)
    final = fold(log)
    assert is_complete(final)
    names = {h.name for h in topology.hats}
    counts: dict[str, int] = {}
    for woken, _topic in activated(log):
        assert woken in names
        counts[woken] = counts.get(woken, 0) + 1
    for h in topology.hats:
        if h.max_activations:
            assert counts.get(h.name, 0) <= h.max_activations
    again = run_log(loop, {k: [list(x) for x in v] for k, v in says.items()}, iterations=5)
    assert again == log
    assert fold(log) == final


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_with_scope_enforced_no_topic_outside_its_hats_scope_ever_waits(
    data: st.DataObject,
) -> None:
    """enforce_hat_scope: a topic the hat at work may not publish is counted as a violation
    and never waits for a hat, and no completion is accepted while a required event is
    missing, at every step of any topology's run."""
    topology = data.draw(topologies())
    required = tuple(data.draw(st.lists(topics(), max_size=2, unique=True)))
    loop = policy(
        *topology.hats,
        starting_event=topology.starting_event,
        coordinator=topology.coordinator,
        commits=topology.commits,
        enforce_hat_scope=True,
        required_events=required,
    )
    says = _says(data.draw, topology)
    log = run_log(loop, {k: [list(x) for x in v] for k, v in says.items()}, iterations=5)
    state = PipelineState()
    for event in log:
        after = reduce(state, event)
        working = state.routing.hat
        by_hat = state.intake.publisher is Role.DEVELOPER  # not the committer's, say
        if isinstance(event, TopicPublished) and working is not None and by_hat:
            hat = topology.hat(working)
            assert hat is not None
            grew = len(after.routing.pending) > len(state.routing.pending)
            if event.topic != "LOOP_COMPLETE" and not in_scope(hat.publishes, event.topic):
                assert not grew, f"{event.topic} waits although {working} may not publish it"
                assert after.intake.scope_violations == state.intake.scope_violations + 1
        if after.intake.completion_claimed and not state.intake.completion_claimed:
            assert set(required) <= after.intake.seen_topics
        state = after


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_routing_in_a_world_that_chooses_everything_still_ends(data: st.DataObject) -> None:
    """The simulated world's agents fail, time out, answer malformed, publish anything: a
    topology run still ends within its step bound, with no anomaly."""
    topology = data.draw(topologies())
    loop = policy(
        *topology.hats,
        starting_event=topology.starting_event,
        coordinator=topology.coordinator,
        commits=topology.commits,
    )
    config = WorldConfig(
        budget=budget(max_iterations=4), chains=default_chains(("a", "b")), loop=loop
    )
    clock = fake_clock(step=timedelta(seconds=1))
    world = SimulatedWorld(config=config, chooser=HypothesisChooser(data.draw), clock=clock)
    result = run_in_memory(
        world,
        options=RunOptions(max_effects=step_bound(config.budget, config.chains, loop), clock=clock),
    )
    assert is_complete(result.state)
    assert result.state.ledger.anomalies == 0, result.state.ledger.last_anomaly
