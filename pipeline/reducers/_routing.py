"""Routing a user's topology: which topics wait for a hat, and which hat works next (pure).

After each activation the topics its hat published (those the loop does not act on itself:
not the completion or cancellation promise, not a question to a person) wait, oldest first.
The next hat is the one the oldest waiting topic wakes (:meth:`Topology.waking`: the most
specific trigger, then the hat's name); a topic no hat triggers on goes to the coordinator
hat, or is reported and dropped. A hat past its ``max_activations`` gets nothing more: its
topics are dropped, and ``<hat>.exhausted`` is published once, for a hat that triggers on it.
When nothing waits, the ``default_publishes`` of the hat that worked last is published for
it; without one, nothing can go on and the run ends as stalled. Every such decision of ralph's
is a notice, so the next prompt and the topic log say what happened.
"""

from __future__ import annotations

from typing import Final, final

from attrs import evolve, frozen

from pipeline.core.state import (
    MAX_PENDING_TOPICS,
    Intake,
    Notice,
    PipelineState,
    RoutedTopic,
    Routing,
)
from pipeline.events import (
    HUMAN_INTERACT_TOPIC,
    Count,
    Json,
    LoopPolicy,
    TopicPublished,
    Topology,
    WorkHat,
)
from pipeline.reducers._notices import add_notice

__all__ = [
    "DROPPED_TOPIC",
    "Routed",
    "back_to_last_hat",
    "first_topic",
    "next_activation",
    "queued",
]

DROPPED_TOPIC: Final = "ralph.topic_dropped"
"""The notice for a topic no hat gets (nobody triggers on it, its hat is exhausted, or too
many topics were waiting)."""

_NO_PAYLOAD: Final = Json.of(None)


def first_topic(topology: Topology) -> RoutedTopic:
    """The topic a run of ``topology`` starts with."""
    return RoutedTopic(topic=topology.starting_event, payload=_NO_PAYLOAD)


def back_to_last_hat(routing: Routing, topic: str, payload: Json) -> Routing:
    """``routing`` with ralph's ``topic`` waiting first, for the hat that worked last whatever
    its triggers (a refused completion, a blocking gate: that hat is told and works again);
    unchanged when no hat has worked (the built-in pipeline)."""
    if routing.hat is None:
        return routing
    first = RoutedTopic(topic=topic, payload=payload, hat=routing.hat)
    return evolve(routing, pending=(first, *routing.pending))


def queued(state: PipelineState, event: TopicPublished) -> Routing | None:
    """The routing with ``event``'s topic waiting for a hat, when the run follows a topology
    and the loop does not act on the topic itself; None otherwise (nothing changes)."""
    run = state.run
    if run is None or run.loop.topology is None or not _routable(run.loop, event.topic):
        return None
    routing = state.routing
    if len(routing.pending) >= MAX_PENDING_TOPICS:
        return evolve(routing, dropped=routing.dropped + 1)
    topic = RoutedTopic(
        topic=event.topic,
        payload=event.payload,
        line_number=Count(event.line_number),
        activation=state.progress.iteration,
    )
    return evolve(routing, pending=(*routing.pending, topic))


def _routable(policy: LoopPolicy, topic: str) -> bool:
    if topic in (policy.completion_promise, policy.cancellation_promise):
        return False
    return not (topic == HUMAN_INTERACT_TOPIC and policy.human_timeout_s is not None)


@final
@frozen(kw_only=True)
class Routed:
    """What routing decided: the routing and intake after it (``routing.hat`` the hat that
    works next when ``woke``), and whether any hat was woken at all."""

    routing: Routing
    intake: Intake
    woke: bool


def next_activation(state: PipelineState, topology: Topology) -> Routed:
    """Choose the hat that works next, as the module's documentation says."""
    routing, intake = state.routing, state.intake
    pending = list(routing.pending)
    if not pending:
        default = _default(topology, routing.hat)
        if default is not None:
            pending.append(default)
            text = (
                f"Hat '{routing.hat}' published nothing for another hat to take up: ralph "
                f"published its default '{default.topic}'."
            )
            intake = add_notice(intake, Notice(topic=default.topic, text=text))
    activations = dict(routing.activations)
    exhausted, dropped = routing.exhausted, routing.dropped
    while pending:
        topic = pending.pop(0)
        hat = _hat_for(topology, topic)
        if hat is None:
            dropped += 1
            why = f"No hat triggers on '{topic.topic}' and no coordinator is set: dropped."
            intake = _dropped(intake, topic, why)
            continue
        count = activations.get(hat.name, 0)
        if hat.max_activations and count >= hat.max_activations:
            dropped += 1
            if hat.name not in exhausted:
                exhausted = exhausted | {hat.name}
                pending.append(_exhausted(hat, count, topic))
                why = (
                    f"Hat '{hat.name}' was activated {count} times, its max_activations: "
                    f"'{topic.topic}' dropped, '{hat.name}.exhausted' published."
                )
                intake = _dropped(intake, topic, why)
            continue
        activations[hat.name] = count + 1
        chosen = Routing(
            pending=tuple(pending),
            hat=hat.name,
            trigger=topic,
            activations=tuple(sorted(activations.items())),
            exhausted=exhausted,
            dropped=dropped,
        )
        return Routed(routing=chosen, intake=intake, woke=True)
    stalled = evolve(routing, pending=(), exhausted=exhausted, dropped=dropped)
    return Routed(routing=stalled, intake=intake, woke=False)


def _hat_for(topology: Topology, topic: RoutedTopic) -> WorkHat | None:
    if topic.hat is not None:
        return topology.hat(topic.hat)
    woken = topology.waking(topic.topic)
    if woken is None and topology.coordinator is not None:
        return topology.hat(topology.coordinator)
    return woken


def _default(topology: Topology, last: str | None) -> RoutedTopic | None:
    hat = None if last is None else topology.hat(last)
    if hat is None or hat.default_publishes is None:
        return None
    return RoutedTopic(topic=hat.default_publishes, payload=_NO_PAYLOAD)


def _exhausted(hat: WorkHat, count: int, topic: RoutedTopic) -> RoutedTopic:
    payload = Json.of(
        {
            "hat": hat.name,
            "max_activations": hat.max_activations,
            "activations": count,
            "dropped": topic.topic,
        }
    )
    return RoutedTopic(topic=f"{hat.name}.exhausted", payload=payload)


def _dropped(intake: Intake, topic: RoutedTopic, why: str) -> Intake:
    notice = Notice(topic=DROPPED_TOPIC, text=why, line_number=topic.line_number)
    return add_notice(intake, notice)
