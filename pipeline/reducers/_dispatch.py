"""``reduce``: route an event to its category's reducer (pure).

Terminal states absorb: a complete run takes no fact but ``CheckpointSaved`` (bookkeeping that
revives nothing, and without which a checkpoint asked for before completion could never be
recorded), ``RunSalvaged`` (a note that its log was copied past damage), its ``run_end``
hooks' ``HookRan`` and the integration facts of its branch (``ralph worktrees merge``), and
records every other as an anomaly; an
interrupted run takes only ``RunResumed``, ``RunAbandoned`` (a person gives it up),
``RunSalvaged`` and ``CheckpointSaved``; a run that has not started takes only
``RunStarted``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, assert_never

from pipeline.core.state import Phase, PipelineState
from pipeline.events import (
    AgentEvent,
    AwaitingDevFixEvent,
    CheckpointSaved,
    CommitEvent,
    ContextEvent,
    DevelopmentEvent,
    ErrorEvent,
    HookEvent,
    HookRan,
    HumanEvent,
    IntegrationEvent,
    LifecycleEvent,
    MiscEvent,
    PipelineEvent,
    PlanningEvent,
    PromptInputEvent,
    RebaseEvent,
    ReviewEvent,
    RunAbandoned,
    RunForked,
    RunResumed,
    RunSalvaged,
    RunStarted,
    ValidationEvent,
)
from pipeline.events.wire import members
from pipeline.reducers._build import anomaly
from pipeline.reducers.agent import reduce_agent
from pipeline.reducers.commit import reduce_commit, reduce_rebase
from pipeline.reducers.context import reduce_context
from pipeline.reducers.dev_fix import reduce_dev_fix
from pipeline.reducers.development import reduce_development
from pipeline.reducers.error import reduce_error
from pipeline.reducers.hooks import reduce_hook
from pipeline.reducers.human import reduce_human
from pipeline.reducers.integration import reduce_integration
from pipeline.reducers.lifecycle import reduce_lifecycle
from pipeline.reducers.misc import reduce_misc
from pipeline.reducers.planning import reduce_planning
from pipeline.reducers.prompt import reduce_prompt
from pipeline.reducers.review import reduce_review
from pipeline.reducers.validation import reduce_validation

__all__ = ["fold", "reduce", "steps"]


CategoryReducer = Callable[[PipelineState, Any], PipelineState]


def _route(event: PipelineEvent) -> CategoryReducer:
    """The reducer of ``event``'s category; the type checker proves every category is routed."""
    if isinstance(event, AgentEvent):
        return reduce_agent
    if isinstance(event, PromptInputEvent):
        return reduce_prompt
    if isinstance(event, MiscEvent):
        return reduce_misc
    if isinstance(event, DevelopmentEvent):
        return reduce_development
    if isinstance(event, CommitEvent):
        return reduce_commit
    if isinstance(event, ReviewEvent):
        return reduce_review
    if isinstance(event, PlanningEvent):
        return reduce_planning
    if isinstance(event, LifecycleEvent):
        return reduce_lifecycle
    if isinstance(event, RebaseEvent):
        return reduce_rebase
    if isinstance(event, AwaitingDevFixEvent):
        return reduce_dev_fix
    if isinstance(event, HumanEvent):
        return reduce_human
    if isinstance(event, ErrorEvent):
        return reduce_error
    if isinstance(event, ValidationEvent):
        return reduce_validation
    if isinstance(event, IntegrationEvent):
        return reduce_integration
    if isinstance(event, ContextEvent):
        return reduce_context
    if isinstance(event, HookEvent):
        return reduce_hook
    assert_never(event)


# Routing depends on the event's class only, so it is worked out once per class: a dict lookup
# instead of up to thirteen union isinstance checks per event on the fold's hot path.
_ROUTES: dict[type, CategoryReducer] = {}

_COMPLETE_TAKES: frozenset[type] = frozenset(
    {CheckpointSaved, RunSalvaged, HookRan, *members(IntegrationEvent)}
)
"""The facts a complete run still records: bookkeeping that revives nothing, its ``run_end``
hooks, and how its branch lands on a target (the merge queue)."""


def reduce(state: PipelineState, event: PipelineEvent) -> PipelineState:
    """The state after ``event``: total, deterministic, and never mutating ``state``."""
    phase = state.progress.phase
    if phase is Phase.COMPLETE and type(event) not in _COMPLETE_TAKES:
        return anomaly(state, event, "the run is complete")
    if phase is Phase.INTERRUPTED and not isinstance(
        event, RunResumed | RunAbandoned | RunSalvaged | RunForked | CheckpointSaved
    ):
        return anomaly(state, event, "the run is interrupted; resume it first")
    if phase is Phase.NOT_STARTED and not isinstance(event, RunStarted):
        return anomaly(state, event, "the run has not started")
    route = _ROUTES.get(type(event))
    if route is None:
        route = _ROUTES[type(event)] = _route(event)
    return route(state, event)


def fold(events: Iterable[PipelineEvent], state: PipelineState | None = None) -> PipelineState:
    """Fold ``events`` into ``state`` (a fresh state when omitted): replay of an event log."""
    current = PipelineState() if state is None else state
    for event in events:
        current = reduce(current, event)
    return current


def steps(
    events: Iterable[PipelineEvent],
) -> Iterator[tuple[PipelineState, PipelineEvent, PipelineState]]:
    """Fold ``events`` from a fresh state, each with the states before and after it: what a
    view of a run's log reads alongside the facts."""
    after = PipelineState()
    for event in events:
        before, after = after, reduce(after, event)
        yield before, event, after
