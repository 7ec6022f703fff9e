"""Hypothesis strategies for topologies of the user's own (hats routed by topics)."""

from __future__ import annotations

import functools

from hypothesis import strategies as st

from pipeline.app.testing._topics import agent_names, topic_patterns, topics
from pipeline.core.responses import AGENT_RESPONSE
from pipeline.events import (
    Count,
    GateAction,
    GateBoundary,
    GateSpec,
    PostconditionPolicy,
    ScreenKind,
    TamperPolicy,
    Topology,
    WorkHat,
)

__all__ = [
    "gate_spec",
    "gate_specs",
    "postcondition_policies",
    "tamper_policies",
    "topologies",
]


_HAT_NAMES = ("alpha", "beta", "gamma", "delta")


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    """A user's topology of one to four hats over the small topic alphabet of :func:`topics`,
    so that triggers and published topics often meet: any triggers and publishes, maybe a
    default, a limit on activations, an own chain, a schema, a coordinator; committing or not."""
    names = draw(st.lists(st.sampled_from(_HAT_NAMES), min_size=1, max_size=4, unique=True))
    patterns = st.lists(topics() | topic_patterns(), min_size=1, max_size=3).map(tuple)
    own_chain = st.lists(agent_names(), min_size=1, max_size=2, unique=True).map(tuple)
    hats_ = tuple(
        WorkHat(
            name=name,
            triggers=draw(patterns),
            publishes=draw(patterns | st.just(())),
            default_publishes=draw(st.none() | topics()),
            max_activations=Count(draw(st.integers(0, 3))),
            chain=draw(st.just(()) | own_chain),
            response_schema=draw(st.none() | st.just(AGENT_RESPONSE)),
        )
        for name in names
    )
    return Topology(
        hats=hats_,
        starting_event=draw(topics()),
        coordinator=draw(st.none() | st.sampled_from(names)),
        commits=draw(st.booleans()),
    )


@st.composite
def gate_spec(draw: st.DrawFn) -> GateSpec:
    """One gate, at any boundaries (topics the topologies' hats publish, for ``topic``),
    with any action on failure."""
    boundaries = draw(st.lists(st.sampled_from(tuple(GateBoundary)), min_size=1, unique=True))
    topics: tuple[str, ...] = ()
    if GateBoundary.TOPIC in boundaries:
        # The topologies' alphabet, so that a hat's topics often run the gate.
        topics = tuple(draw(st.lists(topic_patterns(), min_size=1, max_size=2, unique=True)))
    return GateSpec(
        name=draw(st.sampled_from(("tests", "lint", "types"))),
        argv=("true",),
        timeout_s=Count(draw(st.integers(1, 600))),
        on=tuple(boundaries),
        on_failure=draw(st.sampled_from(tuple(GateAction))),
        topics=topics,
    )


@functools.cache
def gate_specs() -> st.SearchStrategy[tuple[GateSpec, ...]]:
    """Up to three gates with distinct names."""
    return st.lists(gate_spec(), max_size=3, unique_by=lambda g: g.name).map(tuple)


@functools.cache
def tamper_policies() -> st.SearchStrategy[TamperPolicy | None]:
    """No tamper screen, or one with any action on a hit and a per-detector override."""
    actions = st.sampled_from(tuple(GateAction))
    override = st.tuples(st.sampled_from(tuple(ScreenKind)), actions)
    return st.none() | st.builds(
        TamperPolicy,
        protect=st.just(("Makefile",)),
        actions=st.lists(override, max_size=2, unique_by=lambda o: o[0]).map(tuple),
        on_hit=actions,
    )


@functools.cache
def postcondition_policies() -> st.SearchStrategy[PostconditionPolicy | None]:
    """No postconditions, or any with any action on a failure."""
    return st.none() | st.builds(
        PostconditionPolicy,
        no_secrets=st.booleans(),
        clean_tree=st.booleans(),
        on_failure=st.sampled_from(tuple(GateAction)),
    )
