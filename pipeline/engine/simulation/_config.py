"""What a simulated world is made of: its configuration, the loop policy and answers it uses,
the outcomes an agent can have, and a fake clock (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Final

from attrs import define, field

from pipeline.core.responses import AGENT_RESPONSE
from pipeline.events import (
    AgentName,
    Budget,
    Count,
    Digest,
    Hat,
    Instant,
    JsonValue,
    LoopPolicy,
    Role,
    RoleChain,
    Topology,
)

USAGE_CHOICE: Final = "usage units"
"""The choice of how much an invocation used (0: no usage reported)."""
USAGE_UNIT_USD: Final = 0.25
"""What one unit of simulated usage costs."""


class AgentOutcome(StrEnum):
    """How a simulated agent invocation ends."""

    SUCCESS = "success"
    RETRIABLE_FAILURE = "retriable_failure"
    FATAL_FAILURE = "fatal_failure"
    TIMEOUT = "timeout"
    PROVIDER_LIMITED = "provider_limited"


def fake_clock(
    start: datetime | None = None, step: timedelta = timedelta(seconds=1)
) -> Callable[[], Instant]:
    """A clock that starts at ``start`` and moves on by ``step`` at every reading."""
    current = [start or datetime(2026, 1, 1, tzinfo=UTC)]

    def now() -> Instant:
        value = current[0]
        current[0] = value + step
        return Instant(value)

    return now


def _digest(text: str) -> Digest:
    return Digest(hashlib.sha256(text.encode()).hexdigest())


def simulated_policy() -> LoopPolicy:
    """The loop policy of simulated runs unless one is given: every control on."""
    hats = (
        Hat(
            role=Role.PLANNER, name="planner", publishes=("plan.**", "planner.*", "human.interact")
        ),
        Hat(
            role=Role.DEVELOPER,
            name="builder",
            publishes=("build.**", "developer.*", "task.*", "human.interact"),
        ),
        Hat(
            role=Role.REVIEWER,
            name="reviewer",
            publishes=("review.**", "reviewer.*", "human.interact"),
            response_schema=AGENT_RESPONSE,
        ),
        Hat(role=Role.COMMITTER, name="committer", publishes=("commit.**", "committer.*")),
        Hat(role=Role.FIXER, name="fixer", publishes=("fix.**", "fixer.*", "human.interact")),
    )
    return LoopPolicy(
        hats=hats,
        enforce_hat_scope=True,
        completion_promise="LOOP_COMPLETE",
        cancellation_promise="loop.cancel",
        required_events=("review.passed",),
        stale_repeats=Count(3),
        max_task_blocks=Count(2),
        max_abandoned_tasks=Count(2),
        human_timeout_s=Count(60),
        review_completion=True,
    )


SIMULATED_RESPONSES: tuple[str, ...] = (
    '{"action": "report", "parameters": {"done": true}}',
    '```json\n{"action": "report", "parameters": {}}\n```',
    '{"action": "report"}',
    "I have finished the task.",
)
"""Structured responses simulated agents give: a valid ``agent-response`` first, then a fenced
one (invalid JSON), one missing ``parameters`` (a schema violation), and prose."""

SPECIAL_TOPICS: tuple[tuple[str, JsonValue], ...] = (
    ("human.interact", {"question": "Which database should I use?"}),
    ("build.blocked", {"task": "task-1"}),
    ("build.blocked", {"task": "task-2"}),
    ("LOOP_COMPLETE", "all done"),
    ("loop.cancel", "giving up"),
    ("review.passed", None),
    ("task.complete", "a task"),
    ("build.same", "same again"),
    ("commit.pushed", "out of scope for most hats"),
)
"""Topics simulated agents publish now and then besides their progress reports."""


def topology_topics(topology: Topology) -> tuple[str, ...]:
    """The topics a topology names that are topics (no pattern): what its hats publish, trigger
    on and publish by default, and its starting event, sorted."""
    named = {topology.starting_event}
    for hat in topology.hats:
        for topic in (*hat.publishes, *hat.triggers, hat.default_publishes):
            if topic is not None and "*" not in topic:
                named.add(topic)
    return tuple(sorted(named))


@define(frozen=True, kw_only=True)
class WorldConfig:
    """What the simulated run is configured with."""

    budget: Budget
    chains: tuple[RoleChain, ...]
    rebase_onto: str | None = None
    run_id: str = "sim-run"
    loop: LoopPolicy = field(factory=simulated_policy)


def default_chains(agents: Sequence[str] = ("primary", "fallback")) -> tuple[RoleChain, ...]:
    """The same chain of agents for every role."""
    names = tuple(AgentName(a) for a in agents)
    return tuple(RoleChain(role=role, agents=names) for role in Role)
