"""Hypothesis strategies for topologies: valid hats and policies over a small topic universe,
so that triggers, publishes and promises often meet (the graph tests use them too)."""

from __future__ import annotations

import attrs
from hypothesis import strategies as st

from pipeline.events import Count, LoopPolicy, Topology, WorkHat

HAT_NAMES = ("a", "b", "c", "d")
_SEGMENTS = st.sampled_from(["build", "review", "done", "x"])
_SPECIAL = st.sampled_from(["LOOP_COMPLETE", "loop.cancel", "human.interact", "a.exhausted"])


def literal_topics() -> st.SearchStrategy[str]:
    """Topics of one or two segments, or a promise, human.interact or an exhausted topic."""
    return st.lists(_SEGMENTS, min_size=1, max_size=2).map(".".join) | _SPECIAL


def patterns() -> st.SearchStrategy[str]:
    """Literal topics and wildcard patterns (``*``, ``build.*``, ``**.done``...)."""
    segment = _SEGMENTS | st.just("*") | st.just("**")
    wild = st.just("*") | st.lists(segment, min_size=1, max_size=2).map(".".join)
    return literal_topics() | wild


def work_hats(name: str) -> st.SearchStrategy[WorkHat]:
    """A valid hat called ``name``."""
    return st.builds(
        WorkHat,
        name=st.just(name),
        triggers=st.lists(patterns(), min_size=1, max_size=3).map(tuple),
        publishes=st.lists(patterns(), max_size=3).map(tuple),
        default_publishes=st.none() | literal_topics(),
        max_activations=st.integers(0, 2).map(Count),
    )


@st.composite
def topologies(draw: st.DrawFn) -> Topology:
    """A valid topology of one to four hats; the coordinator may name no hat."""
    names = draw(st.lists(st.sampled_from(HAT_NAMES), min_size=1, max_size=4, unique=True))
    hats = tuple(draw(work_hats(name)) for name in names)
    return Topology(
        hats=hats,
        starting_event=draw(literal_topics()),
        coordinator=draw(st.none() | st.sampled_from([*HAT_NAMES, "ghost"])),
        commits=draw(st.booleans()),
    )


def topology_policies() -> st.SearchStrategy[LoopPolicy]:
    """A policy with a topology, promises and controls drawn from the same small universe."""
    return st.builds(
        attrs.evolve,
        st.just(LoopPolicy.off()),
        topology=topologies(),
        enforce_hat_scope=st.booleans(),
        completion_promise=st.none() | st.sampled_from(["LOOP_COMPLETE", "review.done"]),
        cancellation_promise=st.none() | st.just("loop.cancel"),
        required_events=st.lists(literal_topics(), max_size=2).map(tuple),
        human_timeout_s=st.none() | st.just(Count(600)),
    )
