"""The routes of a topology: where each concrete topic goes, as the engine routes it."""

from __future__ import annotations

import attrs
from hypothesis import given

from pipeline.core.config import Arrival, Route, Via, topology_routes
from pipeline.events import Count, LoopPolicy, Topology, WorkHat
from tests.config.strategies import topology_policies


def test_each_source_of_a_topic_is_a_route_in_order() -> None:
    """The start, then per hat its literal publishes (a pattern only for the completion
    promise), its default_publishes and its exhausted topic."""
    worker = WorkHat(
        name="worker",
        triggers=("go",),
        publishes=("work.done", "work.*", "human.interact", "odd"),
        default_publishes="work.done",
        max_activations=Count(2),
    )
    checker = WorkHat(name="checker", triggers=("work.done",), publishes=("**",))
    topology = Topology(hats=(worker, checker), starting_event="go")
    policy = attrs.evolve(
        LoopPolicy.off(),
        topology=topology,
        completion_promise="work.complete",
        human_timeout_s=Count(60),
    )

    def route(source: str | None, topic: str, via: Via, arrival: Arrival) -> Route:
        target = {"go": "worker", "work.done": "checker"}.get(topic)
        return Route(source=source, topic=topic, via=via, arrival=arrival, target=target)

    assert topology_routes(policy) == (
        route(None, "go", Via.START, Arrival.WAKES),
        route("worker", "work.done", Via.PUBLISHES, Arrival.WAKES),
        route("worker", "human.interact", Via.PUBLISHES, Arrival.ASKS),
        route("worker", "odd", Via.PUBLISHES, Arrival.DROPPED),
        route("worker", "work.complete", Via.PUBLISHES, Arrival.COMPLETES),
        route("worker", "work.done", Via.DEFAULT, Arrival.WAKES),
        route("worker", "worker.exhausted", Via.EXHAUSTED, Arrival.DROPPED),
        route("checker", "work.complete", Via.PUBLISHES, Arrival.COMPLETES),
    )


def test_without_a_human_timeout_a_question_is_a_topic_like_any_other() -> None:
    """``human.interact`` goes to the coordinator then, as the policy documents."""
    hats = (
        WorkHat(name="asker", triggers=("go",), publishes=("human.interact",)),
        WorkHat(name="router", triggers=("nothing",), publishes=()),
    )
    topology = Topology(hats=hats, starting_event="go", coordinator="router")
    policy = attrs.evolve(LoopPolicy.off(), topology=topology)
    asked = topology_routes(policy)[1]
    assert (asked.arrival, asked.target) == (Arrival.COORDINATOR, "router")


@given(policy=topology_policies())
def test_every_route_leads_where_the_engine_routes_its_topic(policy: LoopPolicy) -> None:
    """The first route is the start's; a woken hat is ``waking``'s choice; a topic nobody
    triggers on goes to the coordinator when it names a hat; targets are always hats."""
    routes = topology_routes(policy)
    assert routes == topology_routes(policy)
    topology = policy.topology
    assert topology is not None
    assert routes[0].via is Via.START
    assert all(r.source is not None for r in routes[1:])
    for route in routes:
        assert (route.target is not None) == (route.arrival in (Arrival.WAKES, Arrival.COORDINATOR))
        if route.target is not None:
            assert topology.hat(route.target) is not None
        if route.arrival is Arrival.WAKES:
            woken = topology.waking(route.topic)
            assert woken is not None
            assert woken.name == route.target
        if route.arrival is Arrival.COORDINATOR:
            assert route.target == topology.coordinator
            assert topology.waking(route.topic) is None
