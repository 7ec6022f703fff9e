"""Static checks of a topology: mistakes a run would only show by going wrong (pure).

:func:`topology_problems` reads the policy alone, following the routes of
``_topology_routes`` (literal topics only: a pattern names no concrete topic, except that a
publishes pattern matching the completion promise can publish it).

An **error** is a workflow that cannot work as written; a run should not start with one:

- the coordinator names no hat: topics nobody triggers on would go to a hat that is not there;
- the starting event wakes no hat and there is no coordinator: the run's first topic is dropped;
- no hat reachable from the starting event can publish the completion promise: the run can
  never complete, only stall or exhaust its budgets (an agent publishing it anyway would be
  going off the workflow, which is no design to rely on);
- a default_publishes equal to the completion promise: a run must not complete because a hat
  published nothing;
- two hats with an identical trigger: ambiguous routing (ralph-orchestrator's name for it);
  :meth:`Topology.waking` would pick one by name, silently idling the other on that topic.

A **warning** is a workflow that works, but probably not as its author meant:

- a hat nobody can wake: no route from the starting event leads to it (the coordinator is
  never reported: it is the fallback for topics the configuration cannot foresee; it counts
  as woken when a route leads to it, or when a woken hat may publish a topic nobody triggers
  on because it has a pattern in publishes or scope is not enforced, and what it publishes
  then counts too). Only literal topics are followed, so a hat woken by a topic another hat
  publishes through a pattern is reported too;
- a literal topic a hat publishes (or its default_publishes) that no hat triggers on: it goes
  to the coordinator, or is reported and dropped;
- a default_publishes outside the hat's own publishes while enforce_hat_scope is on;
- two hats whose triggers match a topic of the topology equally specifically: the routing is
  deterministic (the first by name wins) but the loser never gets that topic;
- a required event no hat can publish: the completion gate might never open, unless an agent
  publishes it outside its declared topics.

Problems come errors first, then warnings, each kind in the order above and hats in the
topology's order.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Iterator
from typing import final

from attrs import frozen

from pipeline.core.config._topology_routes import (
    Arrival,
    Route,
    Via,
    coordinator,
    is_literal,
    topology_routes,
)
from pipeline.events import (
    HUMAN_RESPONSE_TOPIC,
    HUMAN_TIMEOUT_TOPIC,
    LoopPolicy,
    Topology,
    specificity,
    topic_matches,
)

__all__ = ["Severity", "TopologyProblem", "topology_problems"]


class Severity(enum.Enum):
    """How bad a topology problem is."""

    ERROR = "error"
    """The workflow cannot work as written."""
    WARNING = "warning"
    """The workflow works, but probably not as meant."""


@final
@frozen(kw_only=True)
class TopologyProblem:
    """One problem of a topology, naming the hat and the topic concerned."""

    severity: Severity
    hat: str | None
    """The hat the problem is about (None: the topology as a whole)."""
    message: str


def _error(message: str, hat: str | None = None) -> TopologyProblem:
    return TopologyProblem(severity=Severity.ERROR, hat=hat, message=message)


def _warning(message: str, hat: str | None = None) -> TopologyProblem:
    return TopologyProblem(severity=Severity.WARNING, hat=hat, message=message)


def _names(names: list[str]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _reached(policy: LoopPolicy, topology: Topology, routes: tuple[Route, ...]) -> set[str]:
    """The hats some route from the starting event leads to (see the module's docstring)."""
    by_source: dict[str | None, list[Route]] = defaultdict(list)
    for route in routes:
        by_source[route.source].append(route)
    fallback = coordinator(topology)
    reached: set[str] = set()
    frontier: list[str | None] = [None]
    while frontier:
        source = frontier.pop()
        hat = topology.hat(source) if source is not None else None
        woken = [r.target for r in by_source[source] if r.target is not None]
        if hat is not None and fallback is not None:
            unforeseen = not policy.enforce_hat_scope or not all(map(is_literal, hat.publishes))
            if unforeseen:
                woken.append(fallback)
        for name in woken:
            if name not in reached:
                reached.add(name)
                frontier.append(name)
    return reached


def _unknown_coordinator(topology: Topology) -> Iterator[TopologyProblem]:
    name = topology.coordinator
    if name is not None and topology.hat(name) is None:
        hats = _names([hat.name for hat in topology.hats])
        yield _error(f"the coordinator {name!r} names no hat of the topology (hats: {hats})")


def _idle_start(topology: Topology, routes: tuple[Route, ...]) -> Iterator[TopologyProblem]:
    if routes[0].arrival is Arrival.DROPPED:
        yield _error(
            f"the starting event {topology.starting_event!r} wakes no hat and there is no "
            "coordinator: the run's first topic would be dropped"
        )


def _no_completion(
    policy: LoopPolicy, topology: Topology, routes: tuple[Route, ...], reached: set[str]
) -> Iterator[TopologyProblem]:
    promise = policy.completion_promise
    if promise is None:
        return
    if not any(r.arrival is Arrival.COMPLETES and r.source in reached for r in routes):
        yield _error(
            f"no hat reachable from the starting event {topology.starting_event!r} publishes "
            f"the completion promise {promise!r}: the run can never complete"
        )


def _completing_default(policy: LoopPolicy, topology: Topology) -> Iterator[TopologyProblem]:
    for hat in topology.hats:
        if hat.default_publishes is not None and hat.default_publishes == policy.completion_promise:
            yield _error(
                f"hat {hat.name!r}: default_publishes is the completion promise "
                f"{hat.default_publishes!r}; a run must not complete because a hat published "
                "nothing",
                hat.name,
            )


def _duplicate_triggers(topology: Topology) -> Iterator[TopologyProblem]:
    owners: dict[str, list[str]] = defaultdict(list)
    for hat in topology.hats:
        for trigger in dict.fromkeys(hat.triggers):
            owners[trigger].append(hat.name)
    for trigger, hats in owners.items():
        if len(hats) > 1:
            every = "both" if len(hats) == 2 else "all"
            yield _error(
                f"hats {_names(hats)} {every} trigger on {trigger!r}: ambiguous routing "
                "(give the trigger to one hat)",
                hats[0],
            )


def _unwoken(
    topology: Topology, reached: set[str], routes: tuple[Route, ...]
) -> Iterator[TopologyProblem]:
    for hat in topology.hats:
        if hat.name not in reached and hat.name != topology.coordinator:
            yield _warning(
                f"hat {hat.name!r} can never be woken: no topic reachable from the starting "
                f"event {routes[0].topic!r} wakes it (only literal topics are followed)",
                hat.name,
            )


def _orphans(routes: tuple[Route, ...]) -> Iterator[TopologyProblem]:
    for route in routes:
        if route.source is None or route.via not in (Via.PUBLISHES, Via.DEFAULT):
            continue
        what = "publishes" if route.via is Via.PUBLISHES else "has default_publishes"
        if route.arrival is Arrival.COORDINATOR:
            fate = f"it goes to the coordinator {route.target!r}"
        elif route.arrival is Arrival.DROPPED:
            fate = "it is reported and dropped (there is no coordinator)"
        else:
            continue
        yield _warning(
            f"hat {route.source!r} {what} {route.topic!r}, which no hat triggers on: {fate}",
            route.source,
        )


def _default_out_of_scope(policy: LoopPolicy, topology: Topology) -> Iterator[TopologyProblem]:
    if not policy.enforce_hat_scope:
        return
    for hat in topology.hats:
        topic = hat.default_publishes
        if topic is not None and not any(topic_matches(p, topic) for p in hat.publishes):
            yield _warning(
                f"hat {hat.name!r}: default_publishes {topic!r} matches none of its publishes "
                "while enforce_hat_scope is on",
                hat.name,
            )


def _ties(topology: Topology, routes: tuple[Route, ...]) -> Iterator[TopologyProblem]:
    for topic in dict.fromkeys(r.topic for r in routes if r.arrival is Arrival.WAKES):
        best: dict[str, tuple[int, list[str]]] = {}
        for hat in topology.hats:
            matching = [t for t in hat.triggers if topic_matches(t, topic)]
            if matching:
                rank = min(map(specificity, matching))
                best[hat.name] = (rank, [t for t in matching if specificity(t) == rank])
        top = min(rank for rank, _ in best.values())
        tied = {name: triggers for name, (rank, triggers) in best.items() if rank == top}
        shared = set.intersection(*(set(triggers) for triggers in tied.values()))
        if len(tied) < 2 or shared:
            continue  # one hat, or one trigger all of them share: a duplicate trigger error
        winner = topology.waking(topic)
        assert winner is not None  # some trigger matches: best is not empty
        hats = ", ".join(f"{name!r} ({', '.join(map(repr, tied[name]))})" for name in sorted(tied))
        yield _warning(
            f"topic {topic!r} matches triggers of hats {hats} equally specifically: "
            f"{winner.name!r} wins (the first by name) and the others never get it",
            winner.name,
        )


def _unpublished_required(policy: LoopPolicy, topology: Topology) -> Iterator[TopologyProblem]:
    seen = {topology.starting_event}
    if policy.human_timeout_s is not None:
        seen |= {HUMAN_RESPONSE_TOPIC, HUMAN_TIMEOUT_TOPIC}
    for hat in topology.hats:
        if hat.default_publishes is not None:
            seen.add(hat.default_publishes)
        if hat.max_activations:
            seen.add(f"{hat.name}.exhausted")
    patterns = [p for hat in topology.hats for p in hat.publishes]
    for topic in dict.fromkeys(policy.required_events):
        if topic not in seen and not any(topic_matches(p, topic) for p in patterns):
            yield _warning(
                f"required event {topic!r}: no hat can publish it, so the completion gate "
                "may never open"
            )


def topology_problems(policy: LoopPolicy) -> tuple[TopologyProblem, ...]:
    """Every problem of the policy's topology, errors first (empty without a topology)."""
    topology = policy.topology
    if topology is None:
        return ()
    routes = topology_routes(policy)
    reached = _reached(policy, topology, routes)
    problems = [
        *_unknown_coordinator(topology),
        *_idle_start(topology, routes),
        *_no_completion(policy, topology, routes, reached),
        *_completing_default(policy, topology),
        *_duplicate_triggers(topology),
        *_unwoken(topology, reached, routes),
        *_orphans(routes),
        *_default_out_of_scope(policy, topology),
        *_ties(topology, routes),
        *_unpublished_required(policy, topology),
    ]
    # Every check yields one severity, so a stable sort keeps each kind's order.
    return tuple(sorted(problems, key=lambda p: p.severity is Severity.WARNING))
