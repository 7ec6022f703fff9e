"""``reduce``: route an event to its category's reducer (pure).

Terminal states absorb: a complete run takes no fact but records it as an anomaly; an
interrupted run takes only ``RunResumed`` and ``CheckpointSaved``; a run that has not started
takes only ``RunStarted``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import assert_never

from pipeline.events import (
    AgentEvent,
    AwaitingDevFixEvent,
    CheckpointSaved,
    CommitEvent,
    DevelopmentEvent,
    ErrorEvent,
    HumanEvent,
    LifecycleEvent,
    MiscEvent,
    PipelineEvent,
    PlanningEvent,
    PromptInputEvent,
    RebaseEvent,
    ReviewEvent,
    RunResumed,
    RunStarted,
    ValidationEvent,
)
from pipeline.reducers._build import anomaly
from pipeline.reducers.agent import reduce_agent
from pipeline.reducers.commit import reduce_commit, reduce_rebase
from pipeline.reducers.dev_fix import reduce_dev_fix
from pipeline.reducers.development import reduce_development
from pipeline.reducers.error import reduce_error
from pipeline.reducers.human import reduce_human
from pipeline.reducers.lifecycle import reduce_lifecycle
from pipeline.reducers.misc import reduce_misc
from pipeline.reducers.planning import reduce_planning
from pipeline.reducers.prompt import reduce_prompt
from pipeline.reducers.review import reduce_review
from pipeline.reducers.validation import reduce_validation
from pipeline.state import Phase, PipelineState

__all__ = ["fold", "reduce"]


def reduce(state: PipelineState, event: PipelineEvent) -> PipelineState:
    """The state after ``event``: total, deterministic, and never mutating ``state``."""
    phase = state.progress.phase
    if phase is Phase.COMPLETE:
        return anomaly(state, event, "the run is complete")
    if phase is Phase.INTERRUPTED and not isinstance(event, RunResumed | CheckpointSaved):
        return anomaly(state, event, "the run is interrupted; resume it first")
    if phase is Phase.NOT_STARTED and not isinstance(event, RunStarted):
        return anomaly(state, event, "the run has not started")
    # Most common categories first: this is the fold's hot path.
    if isinstance(event, AgentEvent):
        return reduce_agent(state, event)
    if isinstance(event, PromptInputEvent):
        return reduce_prompt(state, event)
    if isinstance(event, MiscEvent):
        return reduce_misc(state, event)
    if isinstance(event, DevelopmentEvent):
        return reduce_development(state, event)
    if isinstance(event, CommitEvent):
        return reduce_commit(state, event)
    if isinstance(event, ReviewEvent):
        return reduce_review(state, event)
    if isinstance(event, PlanningEvent):
        return reduce_planning(state, event)
    if isinstance(event, LifecycleEvent):
        return reduce_lifecycle(state, event)
    if isinstance(event, RebaseEvent):
        return reduce_rebase(state, event)
    if isinstance(event, AwaitingDevFixEvent):
        return reduce_dev_fix(state, event)
    if isinstance(event, HumanEvent):
        return reduce_human(state, event)
    if isinstance(event, ErrorEvent):
        return reduce_error(state, event)
    if isinstance(event, ValidationEvent):
        return reduce_validation(state, event)
    assert_never(event)


def fold(events: Iterable[PipelineEvent], state: PipelineState | None = None) -> PipelineState:
    """Fold ``events`` into ``state`` (a fresh state when omitted): replay of an event log."""
    current = PipelineState() if state is None else state
    for event in events:
        current = reduce(current, event)
    return current
