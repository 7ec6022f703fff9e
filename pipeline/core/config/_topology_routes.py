"""The routes of a topology read from its policy alone: where each concrete topic a hat can
publish goes (pure).

A route is one topic from one source: the starting event from the run's start, and from each
hat its literal ``publishes`` (patterns name no concrete topic), its ``default_publishes`` and,
with ``max_activations``, its ``<hat>.exhausted``. A publishes pattern that matches the
completion promise is a route too: it is the one topic every workflow must be able to reach.

Where a topic goes is the engine's routing: the completion and cancellation promises end the
run, ``human.interact`` asks a person (when the policy has a human timeout; otherwise it is a
topic like any other), a topic some hat triggers on wakes :meth:`Topology.waking`'s choice,
anything else goes to the coordinator, or is reported and dropped when there is none. A
coordinator naming no hat is treated as none, so no route leads to a hat that does not exist.

The static checks (``_topology_checks``) and the drawings (``pipeline.app.graph``) read these
routes, so what a drawing shows and what a check reports agree.
"""

from __future__ import annotations

import enum
from typing import final

from attrs import frozen

from pipeline.events import HUMAN_INTERACT_TOPIC, LoopPolicy, Topology, WorkHat, topic_matches

__all__ = ["Arrival", "Route", "Via", "arrival", "coordinator", "is_literal", "topology_routes"]


class Via(enum.Enum):
    """How a route's topic comes to be pending."""

    START = "start"
    """The run starts with the starting event pending."""
    PUBLISHES = "publishes"
    """The hat may publish it: a literal topic of its publishes, or the completion promise
    one of its patterns matches."""
    DEFAULT = "default"
    """Published for the hat when nothing is pending after its activation."""
    EXHAUSTED = "exhausted"
    """Published once when the hat is past its ``max_activations``."""


class Arrival(enum.Enum):
    """What becomes of a pending topic."""

    WAKES = "wakes"
    """A hat triggers on it; the route's target is the hat it wakes."""
    COORDINATOR = "coordinator"
    """No hat triggers on it; the route's target is the coordinator."""
    DROPPED = "dropped"
    """No hat triggers on it and there is no coordinator: it is reported and dropped."""
    COMPLETES = "completes"
    """The completion promise: the run ends through the completion gate."""
    CANCELS = "cancels"
    """The cancellation promise: the run is cancelled."""
    ASKS = "asks"
    """``human.interact``: a person is asked."""


@final
@frozen(kw_only=True)
class Route:
    """One concrete topic from one source, and what becomes of it."""

    source: str | None
    """The hat that publishes it (None: the run's start)."""
    topic: str
    via: Via
    arrival: Arrival
    target: str | None
    """The hat it wakes (``WAKES`` and ``COORDINATOR`` only; None otherwise)."""


def is_literal(pattern: str) -> bool:
    """Whether ``pattern`` is a topic itself (no wildcard segment)."""
    return "*" not in pattern


def coordinator(topology: Topology) -> str | None:
    """The topology's coordinator, when it names one of its hats (otherwise there is none)."""
    name = topology.coordinator
    return name if name is not None and topology.hat(name) is not None else None


def arrival(policy: LoopPolicy, topology: Topology, topic: str) -> tuple[Arrival, str | None]:
    """What becomes of ``topic`` when it is the oldest pending one, and the hat it wakes."""
    if topic == policy.completion_promise:
        return Arrival.COMPLETES, None
    if topic == policy.cancellation_promise:
        return Arrival.CANCELS, None
    if topic == HUMAN_INTERACT_TOPIC and policy.human_timeout_s is not None:
        return Arrival.ASKS, None
    woken = topology.waking(topic)
    if woken is not None:
        return Arrival.WAKES, woken.name
    fallback = coordinator(topology)
    if fallback is not None:
        return Arrival.COORDINATOR, fallback
    return Arrival.DROPPED, None


def _emitted(policy: LoopPolicy, hat: WorkHat) -> list[tuple[str, Via]]:
    topics = list(dict.fromkeys(p for p in hat.publishes if is_literal(p)))
    emitted = [(topic, Via.PUBLISHES) for topic in topics]
    promise = policy.completion_promise
    if (
        promise is not None
        and promise not in topics
        and any(topic_matches(p, promise) for p in hat.publishes)
    ):
        emitted.append((promise, Via.PUBLISHES))
    if hat.default_publishes is not None:
        emitted.append((hat.default_publishes, Via.DEFAULT))
    if hat.max_activations:
        emitted.append((f"{hat.name}.exhausted", Via.EXHAUSTED))
    return emitted


def topology_routes(policy: LoopPolicy) -> tuple[Route, ...]:
    """Every route of the policy's topology: the start's first, then each hat's in the
    topology's order (publishes, default_publishes, exhausted); empty without a topology."""
    topology = policy.topology
    if topology is None:
        return ()
    sources: list[tuple[str | None, str, Via]] = [(None, topology.starting_event, Via.START)]
    sources += [(hat.name, t, via) for hat in topology.hats for t, via in _emitted(policy, hat)]
    routes = []
    for source, topic, via in sources:
        landing, target = arrival(policy, topology, topic)
        routes.append(Route(source=source, topic=topic, via=via, arrival=landing, target=target))
    return tuple(routes)
