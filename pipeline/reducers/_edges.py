"""The phase graph, declared: every phase change the reducers make, each labelled with the fact
that makes it.

``reduce`` does not read this table (its decisions are guards over budgets, claims, gates and
topologies, which a table would only repeat); the table is the reducers' contract. ``ralph
graph`` and ``ralph serve``'s run page draw it, and ``tests/graph`` holds it equal to an
exploration of the orchestration: every effect ``next_effect`` asks for, carried out in every
way the simulated world can, each outcome folded. A reducer change that adds or drops a phase
change fails that test, which prints the lines to add here or remove.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Final, TypeAlias, final

from attrs import frozen

from pipeline.core.state import Phase
from pipeline.events import (
    WIRE_TAGS,
    BudgetExceeded,
    ChangesScreened,
    CommitCreated,
    CommitSkipped,
    CompletionMarkerEmitted,
    DevelopmentIterationCompleted,
    DevFixCompleted,
    FinalValidationFailed,
    FinalValidationPassed,
    FixAttemptCompleted,
    GateFinished,
    HookRan,
    HumanInterventionRequired,
    InvocationFailed,
    InvocationTimedOut,
    OutputLineMalformed,
    PipelineEvent,
    PlanProduced,
    PlanRejected,
    ProviderLimited,
    RebaseAborted,
    RebaseSucceeded,
    ResponseSubmitted,
    ReviewClean,
    ReviewIssuesFound,
    RunAbandoned,
    RunCompleted,
    RunInterrupted,
    RunResumed,
    RunStarted,
    TopicPublished,
    WorkspaceIoError,
)
from pipeline.reducers._dispatch import steps

__all__ = ["Edge", "phase_changes", "phase_edges"]


@final
@frozen(order=True, kw_only=True)
class Edge:
    """A phase change: ``source`` to ``target``, made by the fact tagged ``fact``."""

    source: Phase
    target: Phase
    fact: str
    """The wire tag of the fact that made the change (``planning.plan_produced``)."""


_Facts: TypeAlias = tuple[type[PipelineEvent], ...]

_CHAIN_ENDS: Final[_Facts] = (InvocationFailed, InvocationTimedOut, ProviderLimited)
"""An agent chain runs out of agents: the run awaits a dev-fix (or, past it, finalizes)."""

_AGENT_STOPS: Final[_Facts] = (
    *_CHAIN_ENDS,
    OutputLineMalformed,
    ResponseSubmitted,
    TopicPublished,
    HookRan,
)
"""What an agent's step reports that can end the run early, to finalizing."""

_HALTS: Final[_Facts] = (WorkspaceIoError, HookRan, RunInterrupted)
"""What stops a run for a person in any running phase: an I/O error, a suspending hook, a
signal."""

_AGENT_HALTS: Final[_Facts] = (*_HALTS, HumanInterventionRequired)
"""The halts of a phase with an agent at work, which may also ask for a person."""

_COMMITTED: Final[_Facts] = (CommitCreated, CommitSkipped, RebaseAborted, RebaseSucceeded)
"""A commit step ends (with or without a commit, then the rebase onto the target either way)."""

_GATES: Final[_Facts] = (ChangesScreened, GateFinished)
"""A round of gates ends: its screen, or its last gate."""

_VERDICTS: Final[_Facts] = (FinalValidationFailed, FinalValidationPassed)
"""Final validation's verdict."""

_P = Phase
_DECLARED: Final[dict[tuple[Phase, Phase], _Facts]] = {
    (_P.NOT_STARTED, _P.PLANNING): (RunStarted,),
    (_P.NOT_STARTED, _P.DEVELOPMENT): (RunStarted,),
    (_P.NOT_STARTED, _P.FINALIZING): (RunStarted,),
    (_P.PLANNING, _P.DEVELOPMENT): (PlanProduced,),
    (_P.PLANNING, _P.FINAL_VALIDATION): (TopicPublished, PlanProduced),
    (_P.PLANNING, _P.AWAITING_DEV_FIX): (*_CHAIN_ENDS, PlanRejected),
    (_P.PLANNING, _P.FINALIZING): (*_AGENT_STOPS, BudgetExceeded, PlanProduced, PlanRejected),
    (_P.PLANNING, _P.INTERRUPTED): _AGENT_HALTS,
    (_P.DEVELOPMENT, _P.COMMIT_MESSAGE): (DevelopmentIterationCompleted, *_GATES),
    (_P.DEVELOPMENT, _P.FINAL_VALIDATION): (TopicPublished, DevelopmentIterationCompleted),
    (_P.DEVELOPMENT, _P.AWAITING_DEV_FIX): _CHAIN_ENDS,
    (_P.DEVELOPMENT, _P.FINALIZING): (
        *_AGENT_STOPS,
        BudgetExceeded,
        DevelopmentIterationCompleted,
        *_GATES,
    ),
    (_P.DEVELOPMENT, _P.INTERRUPTED): _AGENT_HALTS,
    (_P.REVIEW, _P.DEVELOPMENT): _GATES,
    (_P.REVIEW, _P.COMMIT_MESSAGE): (FixAttemptCompleted, *_GATES),
    (_P.REVIEW, _P.FINAL_VALIDATION): (TopicPublished, FixAttemptCompleted, ReviewClean),
    (_P.REVIEW, _P.AWAITING_DEV_FIX): _CHAIN_ENDS,
    (_P.REVIEW, _P.FINALIZING): (
        *_AGENT_STOPS,
        BudgetExceeded,
        FixAttemptCompleted,
        ReviewIssuesFound,
        *_GATES,
    ),
    (_P.REVIEW, _P.INTERRUPTED): _AGENT_HALTS,
    (_P.COMMIT_MESSAGE, _P.DEVELOPMENT): _COMMITTED,
    (_P.COMMIT_MESSAGE, _P.REVIEW): _COMMITTED,
    (_P.COMMIT_MESSAGE, _P.FINAL_VALIDATION): _COMMITTED,
    (_P.COMMIT_MESSAGE, _P.AWAITING_DEV_FIX): _CHAIN_ENDS,
    (_P.COMMIT_MESSAGE, _P.FINALIZING): (*_AGENT_STOPS, *_COMMITTED),
    (_P.COMMIT_MESSAGE, _P.INTERRUPTED): _AGENT_HALTS,
    (_P.FINAL_VALIDATION, _P.DEVELOPMENT): (*_GATES, *_VERDICTS),
    (_P.FINAL_VALIDATION, _P.FINALIZING): (
        OutputLineMalformed,
        TopicPublished,
        BudgetExceeded,
        HookRan,
        *_GATES,
        *_VERDICTS,
    ),
    (_P.FINAL_VALIDATION, _P.INTERRUPTED): _HALTS,
    (_P.AWAITING_DEV_FIX, _P.FINALIZING): (*_AGENT_STOPS, DevFixCompleted),
    (_P.AWAITING_DEV_FIX, _P.INTERRUPTED): (*_AGENT_HALTS, CompletionMarkerEmitted),
    (_P.FINALIZING, _P.FINAL_VALIDATION): (TopicPublished,),
    (_P.FINALIZING, _P.COMPLETE): (RunCompleted,),
    (_P.FINALIZING, _P.INTERRUPTED): _HALTS,
    (_P.INTERRUPTED, _P.PLANNING): (RunResumed,),
    (_P.INTERRUPTED, _P.DEVELOPMENT): (RunResumed,),
    (_P.INTERRUPTED, _P.REVIEW): (RunResumed,),
    (_P.INTERRUPTED, _P.COMMIT_MESSAGE): (RunResumed,),
    (_P.INTERRUPTED, _P.FINAL_VALIDATION): (RunResumed,),
    (_P.INTERRUPTED, _P.AWAITING_DEV_FIX): (RunResumed,),
    (_P.INTERRUPTED, _P.FINALIZING): (RunResumed, RunAbandoned),
}
"""Each phase pair the reducers move between, with the facts that make the move."""


@functools.cache
def phase_edges() -> frozenset[Edge]:
    """Every phase change the reducers make (built on first use: ``reduce`` never needs it)."""
    return frozenset(
        Edge(source=source, target=target, fact=WIRE_TAGS[fact])
        for (source, target), facts in _DECLARED.items()
        for fact in facts
    )


def phase_changes(events: Iterable[PipelineEvent]) -> Iterator[Edge]:
    """The phase changes folding ``events`` makes, in order (a run's path through the graph)."""
    for before, event, state in steps(events):
        if state.phase is not before.phase:
            yield Edge(source=before.phase, target=state.phase, fact=WIRE_TAGS[type(event)])
