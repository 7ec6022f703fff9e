"""The static checks of a topology: each mistake reported with its severity, the hat and the
topic, a sound workflow reported clean, and (hypothesis) the checks total and deterministic."""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest
from hypothesis import given

from pipeline.core.config import Severity, TopologyProblem, topology_problems
from pipeline.events import Count, LoopPolicy, Topology, WorkHat
from tests.config.strategies import topology_policies

ERROR, WARNING = Severity.ERROR, Severity.WARNING


def hat(
    name: str,
    triggers: tuple[str, ...],
    publishes: tuple[str, ...] = (),
    default_publishes: str | None = None,
) -> WorkHat:
    """A hat of the examples."""
    return WorkHat(
        name=name, triggers=triggers, publishes=publishes, default_publishes=default_publishes
    )


def policy(
    *hats: WorkHat, start: str = "build.start", coordinator: str | None = None, **loop: Any
) -> LoopPolicy:
    """A policy of the examples: completion promise LOOP_COMPLETE, scope enforced (``loop``:
    other LoopPolicy fields)."""
    topology = Topology(hats=hats, starting_event=start, coordinator=coordinator)
    settings: dict[str, Any] = {
        "completion_promise": "LOOP_COMPLETE",
        "enforce_hat_scope": True,
        **loop,
    }
    return attrs.evolve(LoopPolicy.off(), topology=topology, **settings)


# The code-assist workflow of ralph-orchestrator, which has nothing wrong.
PLANNER = hat("planner", ("build.start", "queue.advance"), ("tasks.ready",))
BUILDER = hat(
    "builder",
    ("tasks.ready", "review.rejected"),
    ("review.ready",),
    default_publishes="review.ready",
)
CRITIC = hat("critic", ("review.ready",), ("review.passed", "review.rejected"))
FINALIZER = hat("finalizer", ("review.passed",), ("queue.advance", "LOOP_COMPLETE"))
SOUND = (PLANNER, BUILDER, CRITIC, FINALIZER)


def only(problems: tuple[TopologyProblem, ...]) -> TopologyProblem:
    """The one problem reported."""
    assert len(problems) == 1, problems
    return problems[0]


def test_a_sound_workflow_has_no_problems() -> None:
    """The baseline every example below breaks in one way."""
    assert topology_problems(policy(*SOUND, required_events=("review.passed",))) == ()


def test_the_built_in_pipeline_has_nothing_to_check() -> None:
    """No topology, no problems."""
    assert topology_problems(LoopPolicy.off()) == ()


def test_a_coordinator_naming_no_hat_is_an_error() -> None:
    """Topics nobody triggers on would go to a hat that is not there."""
    problem = only(topology_problems(policy(*SOUND, coordinator="router")))
    assert problem.severity is ERROR
    assert problem.hat is None
    assert "'router' names no hat" in problem.message


def test_a_starting_event_waking_nobody_without_coordinator_is_an_error() -> None:
    """The run's first topic would be dropped; with a coordinator it goes there instead."""
    lost = policy(*SOUND, start="go")
    errors = [p for p in topology_problems(lost) if "starting event 'go' wakes no hat" in p.message]
    assert [p.severity for p in errors] == [ERROR]
    router = hat("router", ("route.me",), ("build.start",))
    routed = policy(*SOUND, router, start="go", coordinator="router")
    assert topology_problems(routed) == ()


def test_a_hat_nobody_can_wake_is_a_warning_naming_it() -> None:
    """No route from the starting event leads to the hat."""
    idle = hat("idle", ("nobody.publishes.this",), ("review.ready",))
    problem = only(topology_problems(policy(*SOUND, idle)))
    assert (problem.severity, problem.hat) == (WARNING, "idle")
    assert "'idle' can never be woken" in problem.message


def test_default_publishes_and_exhausted_topics_wake_hats() -> None:
    """A hat woken only by another's default_publishes, or by ``<hat>.exhausted`` of a hat
    with max_activations (an escalator), is reachable."""
    limited = attrs.evolve(CRITIC, max_activations=Count(3))
    escalator = hat("escalator", ("critic.exhausted",), ("LOOP_COMPLETE",))
    assert topology_problems(policy(PLANNER, BUILDER, limited, FINALIZER, escalator)) == ()
    unlimited = topology_problems(policy(*SOUND, escalator))
    assert [p.hat for p in unlimited] == ["escalator"]
    by_default = attrs.evolve(PLANNER, default_publishes="extra.work")
    by_default = attrs.evolve(by_default, publishes=(*PLANNER.publishes, "extra.*"))
    extra = hat("extra", ("extra.work",), ("tasks.ready",))
    assert [p.hat for p in topology_problems(policy(*SOUND, extra))] == ["extra"]
    assert topology_problems(policy(by_default, BUILDER, CRITIC, FINALIZER, extra)) == ()


def test_the_coordinator_reaches_the_hats_it_publishes_to() -> None:
    """A topic nobody triggers on wakes the coordinator; what it publishes wakes others; the
    coordinator itself is never reported unwoken (it is the fallback)."""
    asking = attrs.evolve(CRITIC, publishes=(*CRITIC.publishes, "review.unsure"))
    router = hat("router", ("route.me",), ("second.opinion",))
    second = hat("second", ("second.opinion",), ("review.passed",))
    problems = topology_problems(
        policy(PLANNER, BUILDER, asking, FINALIZER, router, second, coordinator="router")
    )
    assert [(p.hat, p.severity) for p in problems] == [("critic", WARNING)]
    unrouted = topology_problems(policy(*SOUND, router, second, coordinator="router"))
    assert [p.hat for p in unrouted] == ["second"]


def test_a_coordinator_counts_as_woken_when_agents_may_publish_unforeseen_topics() -> None:
    """A hat with a pattern in publishes, or any hat when scope is not enforced, can publish
    a topic nobody triggers on; that goes to the coordinator, whose topics then count."""
    router = hat("router", ("route.me",), ("second.opinion",))
    second = hat("second", ("second.opinion",), ("review.passed",))
    strict = policy(*SOUND, router, second, coordinator="router")
    loose = policy(*SOUND, router, second, coordinator="router", enforce_hat_scope=False)
    wild_critic = attrs.evolve(CRITIC, publishes=("review.*",))
    wild = policy(PLANNER, BUILDER, wild_critic, FINALIZER, router, second, coordinator="router")
    assert [p.hat for p in topology_problems(strict)] == ["second"]
    assert topology_problems(loose) == ()
    assert topology_problems(wild) == ()


@pytest.mark.parametrize(
    ("coordinator", "fate"),
    [(None, "it is reported and dropped"), ("router", "it goes to the coordinator 'router'")],
)
def test_a_published_topic_nobody_triggers_on_is_a_warning(
    coordinator: str | None, fate: str
) -> None:
    """The message names the hat, the topic and where it goes."""
    blocked = attrs.evolve(BUILDER, publishes=(*BUILDER.publishes, "build.blocked"))
    router = hat("router", ("route.me",), ("tasks.ready",))
    hats = (PLANNER, blocked, CRITIC, FINALIZER, *([router] if coordinator else []))
    problem = only(topology_problems(policy(*hats, coordinator=coordinator)))
    assert (problem.severity, problem.hat) == (WARNING, "builder")
    assert problem.message.startswith(
        f"hat 'builder' publishes 'build.blocked', which no hat triggers on: {fate}"
    )


def test_a_default_publishes_nobody_triggers_on_is_a_warning() -> None:
    """A default topic is routed like a published one."""
    lazy = attrs.evolve(CRITIC, publishes=(*CRITIC.publishes, "review.idle"))
    lazy = attrs.evolve(lazy, default_publishes="review.idle")
    problems = topology_problems(policy(PLANNER, BUILDER, lazy, FINALIZER))
    assert [p.message.split(":")[0] for p in problems] == [
        "hat 'critic' publishes 'review.idle', which no hat triggers on",
        "hat 'critic' has default_publishes 'review.idle', which no hat triggers on",
    ]


def test_promises_and_questions_are_no_orphans() -> None:
    """The completion and cancellation promises and human.interact (with a human timeout)
    are not routed to hats, so publishing them is no warning."""
    asking = attrs.evolve(BUILDER, publishes=(*BUILDER.publishes, "loop.cancel", "human.interact"))
    hats = (PLANNER, asking, CRITIC, FINALIZER)
    asked = policy(*hats, cancellation_promise="loop.cancel", human_timeout_s=Count(60))
    assert topology_problems(asked) == ()
    plain = topology_problems(policy(*hats, cancellation_promise="loop.cancel"))
    assert ["'human.interact', which no hat triggers on" in p.message for p in plain] == [True]


def test_no_path_to_the_completion_promise_is_an_error() -> None:
    """No hat reachable from the start can publish it: the run can never complete."""
    stuck = attrs.evolve(FINALIZER, publishes=("queue.advance",))
    problem = only(topology_problems(policy(PLANNER, BUILDER, CRITIC, stuck)))
    assert (problem.severity, problem.hat) == (ERROR, None)
    assert "completion promise 'LOOP_COMPLETE': the run can never complete" in problem.message
    assert topology_problems(policy(PLANNER, BUILDER, CRITIC, stuck, completion_promise=None)) == ()


def test_a_publishes_pattern_matching_the_promise_is_a_path_to_completion() -> None:
    """``review.*`` can publish ``review.done``."""
    wild = attrs.evolve(FINALIZER, publishes=("queue.advance", "review.*"))
    assert (
        topology_problems(policy(PLANNER, BUILDER, CRITIC, wild, completion_promise="review.done"))
        == ()
    )


def test_an_unreachable_hat_publishing_the_promise_is_no_path() -> None:
    """Only hats reachable from the starting event count."""
    cut = attrs.evolve(CRITIC, publishes=("review.rejected",))
    problems = topology_problems(policy(PLANNER, BUILDER, cut, FINALIZER))
    assert [(p.severity, p.hat) for p in problems] == [(ERROR, None), (WARNING, "finalizer")]


def test_default_publishes_of_the_completion_promise_is_an_error() -> None:
    """A run must not complete because a hat published nothing."""
    eager = attrs.evolve(FINALIZER, default_publishes="LOOP_COMPLETE")
    problem = only(topology_problems(policy(PLANNER, BUILDER, CRITIC, eager)))
    assert (problem.severity, problem.hat) == (ERROR, "finalizer")
    assert "default_publishes is the completion promise 'LOOP_COMPLETE'" in problem.message


def test_default_publishes_outside_the_hats_scope_is_a_warning_when_enforced() -> None:
    """With scope enforced the default topic should be one the hat may publish."""
    odd = attrs.evolve(CRITIC, default_publishes="tasks.ready")
    problem = only(topology_problems(policy(PLANNER, BUILDER, odd, FINALIZER)))
    assert (problem.severity, problem.hat) == (WARNING, "critic")
    assert "default_publishes 'tasks.ready' matches none of its publishes" in problem.message
    loose = policy(PLANNER, BUILDER, odd, FINALIZER, enforce_hat_scope=False)
    assert topology_problems(loose) == ()


def test_two_hats_with_one_trigger_is_an_ambiguous_routing_error() -> None:
    """The same trigger string on two hats: one would never get it (and here, having no
    other trigger, is never woken)."""
    twin = hat("twin", ("review.ready",), ("review.passed",))
    ambiguous, unwoken = topology_problems(policy(*SOUND, twin))
    assert (ambiguous.severity, ambiguous.hat) == (ERROR, "critic")
    assert ambiguous.message == (
        "hats 'critic' and 'twin' both trigger on 'review.ready': ambiguous routing "
        "(give the trigger to one hat)"
    )
    assert (unwoken.severity, unwoken.hat) == (WARNING, "twin")


def test_two_triggers_equally_specific_for_a_topic_is_a_warning_naming_the_winner() -> None:
    """``review.*`` and ``*.ready`` both match review.ready at one specificity; ``waking``
    picks the first by name."""
    critic = attrs.evolve(CRITIC, triggers=("review.*",))
    auditor = hat("auditor", ("*.ready",), ("review.passed",))
    problems = topology_problems(policy(PLANNER, BUILDER, critic, FINALIZER, auditor))
    assert [(p.severity, p.hat) for p in problems] == [(WARNING, "critic"), (WARNING, "auditor")]
    assert problems[1].message == (
        "topic 'review.ready' matches triggers of hats 'auditor' ('*.ready'), 'critic' "
        "('review.*') equally specifically: 'auditor' wins (the first by name) and the others "
        "never get it"
    )


def test_a_more_specific_trigger_is_no_tie() -> None:
    """``review.ready`` beats ``review.*``: the catch-all hat gets only the review topics
    nobody names."""
    flaky = attrs.evolve(CRITIC, publishes=(*CRITIC.publishes, "review.flaky"))
    catch_all = hat("catch_all", ("review.*",), ("review.passed",))
    assert topology_problems(policy(PLANNER, BUILDER, flaky, FINALIZER, catch_all)) == ()


def test_a_required_event_no_hat_can_publish_is_a_warning() -> None:
    """The completion gate might never open; a pattern that matches it is enough."""
    problem = only(topology_problems(policy(*SOUND, required_events=("tests.green",))))
    assert (problem.severity, problem.hat) == (WARNING, None)
    assert "required event 'tests.green': no hat can publish it" in problem.message
    wide = attrs.evolve(BUILDER, publishes=("review.ready", "tests.*"))
    fine = policy(PLANNER, wide, CRITIC, FINALIZER, required_events=("tests.green",))
    assert topology_problems(fine) == ()


def test_errors_come_before_warnings() -> None:
    """An unwoken hat (warning) and an unknown coordinator (error): the error first."""
    idle = hat("idle", ("nobody.publishes.this",), ("review.ready",))
    problems = topology_problems(policy(*SOUND, idle, coordinator="ghost"))
    assert [p.severity for p in problems] == [ERROR, WARNING]


@given(policy=topology_policies())
def test_the_checks_are_total_deterministic_and_name_existing_hats(policy: LoopPolicy) -> None:
    """Any valid topology gets an answer, the same twice, without changing the policy; every
    problem names a hat of the topology or none, and errors come first."""
    before = copy.deepcopy(policy)
    problems = topology_problems(policy)
    assert problems == topology_problems(policy)
    assert policy == before
    assert policy.topology is not None
    names = {hat.name for hat in policy.topology.hats}
    assert all(p.hat is None or p.hat in names for p in problems)
    assert all(p.message for p in problems)
    severities = [p.severity for p in problems]
    assert severities == sorted(severities, key=lambda s: s is WARNING)
