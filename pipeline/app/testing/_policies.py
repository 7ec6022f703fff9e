"""Hypothesis strategies for the policy a run records in ``RunStarted``: its hats, its loop
policy with a topology, gates, screens, provider limits and escalation ladders."""

from __future__ import annotations

import functools

import attrs
from hypothesis import strategies as st

from pipeline.app.testing._topics import topic_patterns, topics
from pipeline.app.testing._topologies import (
    gate_specs,
    postcondition_policies,
    tamper_policies,
    topologies,
)
from pipeline.core.responses import AGENT_RESPONSE
from pipeline.events import (
    BLOCKABLE,
    SUSPENDABLE,
    Count,
    Hat,
    HookAction,
    HookPoint,
    HookSpec,
    Ladder,
    LimitPolicy,
    LoopPolicy,
    OnUsageLimit,
    Role,
)

__all__ = ["hats", "hook_spec", "ladders_of", "limit_policies", "loop_policies"]


@functools.cache
def hats() -> st.SearchStrategy[tuple[Hat, ...]]:
    """A hat for each role, each with one to three patterns."""

    def hat(role: Role) -> st.SearchStrategy[Hat]:
        patterns = st.lists(topic_patterns(), min_size=1, max_size=3).map(tuple)
        schema = st.none() | st.just(AGENT_RESPONSE)
        return st.builds(
            Hat,
            role=st.just(role),
            name=st.just(f"{role.value}-hat"),
            publishes=patterns,
            response_schema=schema,
        )

    return st.tuples(*(hat(role) for role in Role))


@functools.cache
def loop_policies() -> st.SearchStrategy[LoopPolicy]:
    """Any valid loop policy: controls on or off, small thresholds so detectors fire; the
    built-in pipeline, or a topology of the user's own."""
    promise = st.none() | st.sampled_from(["LOOP_COMPLETE", "task.done"])
    return st.builds(
        LoopPolicy,
        hats=hats(),
        enforce_hat_scope=st.booleans(),
        completion_promise=promise,
        cancellation_promise=st.none() | st.just("loop.cancel"),
        required_events=st.lists(topics(), max_size=3, unique=True).map(tuple),
        stale_repeats=st.integers(0, 4).map(Count),
        max_task_blocks=st.integers(0, 3).map(Count),
        max_abandoned_tasks=st.integers(0, 3).map(Count),
        human_timeout_s=st.none() | st.integers(0, 3_600).map(Count),
        max_formatting_retries=st.integers(0, 3).map(Count),
        topology=st.none() | topologies(),
        gates=gate_specs(),
        tamper=tamper_policies(),
        postconditions=postcondition_policies(),
        limits=st.none() | limit_policies(),
        review_completion=st.booleans(),
        hooks=st.lists(hook_spec(), max_size=3, unique_by=lambda h: (h.point, h.name)).map(tuple),
    ).flatmap(_with_ladders)


@st.composite
def hook_spec(draw: st.DrawFn) -> HookSpec:
    """One lifecycle hook, at any point, doing on a failure what its point allows."""
    point = draw(st.sampled_from(tuple(HookPoint)))
    actions = [HookAction.WARN]
    actions += [HookAction.BLOCK] if point in BLOCKABLE else []
    actions += [HookAction.SUSPEND] if point in SUSPENDABLE else []
    return HookSpec(
        name=draw(st.sampled_from(("notify", "check"))),
        point=point,
        argv=("true",),
        timeout_s=Count(draw(st.integers(1, 60))),
        on_error=draw(st.sampled_from(actions)),
    )


def _with_ladders(policy: LoopPolicy) -> st.SearchStrategy[LoopPolicy]:
    names = (
        [Role.DEVELOPER.value]
        if policy.topology is None
        else [hat.name for hat in policy.topology.hats]
    )
    chosen = st.lists(st.sampled_from(names), max_size=len(names), unique=True)
    drawn = chosen.flatmap(lambda hats: st.tuples(*(ladders_of(hat) for hat in hats)))
    return drawn.map(lambda ladders: attrs.evolve(policy, ladders=ladders))


@functools.cache
def ladders_of(hat: str) -> st.SearchStrategy[Ladder]:
    """An escalation ladder for ``hat``: one to three models, small bounce counts (at least
    one kind counted), review topics, stepping down or not."""
    counts = st.tuples(*(st.integers(0, 3) for _ in range(3))).filter(any)
    models = st.lists(
        st.sampled_from(["m-strong", "m-stronger", "m-best"]), min_size=1, unique=True
    )

    def build(drawn: tuple[int, int, int]) -> st.SearchStrategy[Ladder]:
        return st.builds(
            Ladder,
            hat=st.just(hat),
            models=models.map(tuple),
            review_issues=st.just(Count(drawn[0])),
            blocked=st.just(Count(drawn[1])),
            validation_failed=st.just(Count(drawn[2])),
            review_topics=st.lists(topic_patterns(), max_size=2).map(tuple),
            step_down=st.booleans(),
        )

    return counts.flatmap(build)


@functools.cache
def limit_policies() -> st.SearchStrategy[LimitPolicy]:
    """Any valid ``[limits]`` policy: each choice, waits from none to a day, and a share of a
    usage window to stop at (or none)."""
    return st.builds(
        LimitPolicy,
        on_usage_limit=st.sampled_from(OnUsageLimit),
        max_wait_s=st.integers(0, 86_400).map(Count),
        stop_at_utilization=st.none() | st.floats(0.01, 1.0),
    )
