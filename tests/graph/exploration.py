"""The phase graph, found by running orchestration: every phase change it can lead to.

Nothing here is drawn by hand. From the state before ``RunStarted``, the explorer asks
``next_effect`` for the effect, lets the simulated world carry it out in *every* way it can
(each of its choices, enumerated; a backoff's jitter and a number of issues only at their
ends), folds each outcome with ``reduce`` and records a phase change as an edge labelled with
the fact that made it. Besides the world's facts come those only the real handlers and the
engine report: a workspace I/O error, the runtime budget spent, an interruption and a
resumption.

States are visited once per *shape*: the state with its growing counters, digests and texts
set aside, and what a stopped run leaves behind (what no decision reads), so that the
exploration ends. Small budgets make every limit reachable, every loop control is on at its
lowest threshold, and the run is explored with and without a rebase target. Each edge keeps a
witness: the facts from the first one to the change, so that anyone can fold them and see the
edge happen.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Final, TypeAlias, TypeVar, final

import attrs
from attrs import frozen

from pipeline.core.effects import Effect, InvokeAgent, Terminate, measures_runtime
from pipeline.core.state import Phase, PipelineState, Progress, is_complete, is_terminal
from pipeline.engine.simulation import (
    USAGE_CHOICE,
    USAGE_UNIT_USD,
    SimulatedWorld,
    WorldConfig,
)
from pipeline.events import (
    WIRE_TAGS,
    BudgetExceeded,
    BudgetKind,
    Instant,
    Json,
    PipelineEvent,
    RunAbandoned,
    RunInterrupted,
    RunResumed,
    TopicPublished,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.orchestration import next_effect
from pipeline.reducers import Edge, reduce
from tests.graph.worlds import worlds

__all__ = ["PhaseGraph", "explore"]

T = TypeVar("T")

_Outcomes: TypeAlias = tuple[tuple[int, tuple[PipelineEvent, ...]], ...]
"""Outcomes, each with how many of its first facts the one before it begins with too."""

_AT: Final = Instant(datetime(2026, 1, 1, tzinfo=UTC))
_MAX_STATES: Final = 200_000
"""A guard: the exploration stops with an error rather than run away."""


@final
@frozen(kw_only=True)
class PhaseGraph:
    """Every phase orchestration reaches and every change between them, each with a witness:
    the facts, from the first one, whose fold ends with the change."""

    phases: frozenset[Phase]
    edges: frozenset[Edge]
    witnesses: dict[Edge, tuple[PipelineEvent, ...]] = attrs.field(eq=False)


class _Enumerator:
    """A chooser that follows a given list of choices and records every choice point past it
    (how many options it had), so that all lists can be walked like an odometer."""

    def __init__(self, prefix: Sequence[int], spend: bool) -> None:
        self.prefix = list(prefix)
        self.arities: list[int] = []
        self.spend = spend
        """Whether invocations may report usage (only where a spend limit can be reached)."""

    def _choose(self, count: int) -> int:
        index = len(self.arities)
        self.arities.append(count)
        return self.prefix[index] if index < len(self.prefix) else 0

    def pick(self, options: Sequence[T], what: str) -> T:
        """Option number ``prefix[i]`` (the first, past the prefix)."""
        return options[self._choose(len(options))]

    def number(self, low: int, high: int, what: str) -> int:
        """Every value of a small range; only the two ends of a wide one (a backoff delay)."""
        if what == "lines written to the events file":
            high = min(high, 1)  # one line per invocation reaches every detector, in turn
        if what == USAGE_CHOICE:
            # One unit at a time reaches the spend limit; where none is set, usage decides
            # nothing, and leaving it out keeps the exploration small.
            high = min(high, 1) if self.spend else low
        values = list(range(low, high + 1)) if high - low <= 9 else [low, high]
        return values[self._choose(len(values))]


def _outcomes(world_config: WorldConfig, effect: Effect) -> Iterator[tuple[PipelineEvent, ...]]:
    """Every way the simulated world can carry out ``effect``."""
    if isinstance(effect, Terminate):
        return
    prefix: list[int] = []
    while True:
        chooser = _Enumerator(prefix, world_config.budget.limits_spend)
        world = SimulatedWorld(config=world_config, chooser=chooser, clock=lambda: _AT)
        facts = tuple(world(effect))
        if isinstance(effect, InvokeAgent):
            facts = tuple(_steady(f) for f in facts)
        yield facts
        arities = chooser.arities
        chosen = [*prefix, *([0] * (len(arities) - len(prefix)))]
        # The next list: bump the last choice that has options left, drop what follows it.
        position = len(arities) - 1
        while position >= 0 and chosen[position] + 1 >= arities[position]:
            position -= 1
        if position < 0:
            return
        prefix = [*chosen[:position], chosen[position] + 1]


def _with_shared(outcomes: Iterable[tuple[PipelineEvent, ...]]) -> _Outcomes:
    """Each outcome with how many of its first facts the one before it begins with too: the
    odometer's outcomes mostly differ only at their ends, and that prefix is folded once."""
    paired: list[tuple[int, tuple[PipelineEvent, ...]]] = []
    previous: tuple[PipelineEvent, ...] = ()
    for facts in outcomes:
        shared = 0
        while shared < min(len(facts), len(previous)) and facts[shared] == previous[shared]:
            shared += 1
        paired.append((shared, facts))
        previous = facts
    return tuple(paired)


_PROGRESS: Final = Json.of("progress")


def _steady(fact: PipelineEvent) -> PipelineEvent:
    """A progress report with the same payload every time (the world makes each one unique):
    an agent may well repeat itself, and unique payloads would make every state new."""
    if isinstance(fact, TopicPublished) and fact.topic.endswith(".progress"):
        return attrs.evolve(fact, payload=_PROGRESS)
    return fact


_SPEND_SEEN: Final = 2 * USAGE_UNIT_USD
"""Spend past this is all alike: the spending configuration's limit is two units."""


_RESUME_READ: Final = frozenset({Phase.INTERRUPTED, Phase.AWAITING_DEV_FIX})
"""The phases in which where a stopped run resumes is read."""


def _shape(state: PipelineState) -> tuple[object, ...]:
    """What of ``state`` decides where the run can go: phase and step, the budgets' use, the
    agent cursor, the loop detectors' counts, what is pending. Counters that only grow, digests,
    texts, the prompts' notes and which topic was repeated are set aside, so the exploration
    ends; the hypothesis test of the graph is the check that nothing deciding was left out."""
    i, ledger, run = state.intake, state.ledger, state.run
    question = ledger.pending_question
    response = ledger.response
    return (
        _live(state.progress),
        state.agent,
        frozenset() if run is None else i.seen_topics.intersection(run.loop.required_events),
        i.consecutive_malformed,
        i.completion_claimed,
        min(i.repeats, 3),
        tuple(count for _task, count in i.blocked),
        i.abandoned_tasks,
        None if question is None else question.asked,
        None if response is None else (response.valid, response.failures),
        ledger.pending_commit_message is None,
        ledger.protected_prompt is None,
        state.checkpoints.due,
        min(ledger.spend.total.cost_usd, _SPEND_SEEN),
        _round_shape(state),
        _hooks_shape(state),
    )


def _hooks_shape(state: PipelineState) -> tuple[object, ...]:
    """What of the hooks' record decides which hook is due next: the hooks that ran before
    the step at hand (only while no other fact came since), the once-per-occasion ones that
    ran, and the last invocation's hooks still to run (how far its facts are in, capped)."""
    hooks = state.hooks
    here = hooks.here if hooks.here_at == state.sequence else ()
    after = hooks.after
    last = None if after is None else (after.failed, after.ran)
    return (here, len(hooks.once), last)


def _live(progress: Progress) -> Progress:
    """``progress`` without what no step will read. Where a stopped run resumes is read only
    while it is interrupted or awaits dev-fix, the dev-fix task only while it awaits dev-fix,
    and entering either phase writes them afresh (``interrupt``, ``chain_exhausted``, a
    resumption); elsewhere they are leftovers (an abandoned run's finalization keeps them), and
    keeping them made the exploration four times as large for no edge."""
    phase = progress.phase
    resume = progress.resume if phase in _RESUME_READ else None
    dev_fix = progress.dev_fix if phase is Phase.AWAITING_DEV_FIX else None
    if resume is progress.resume and dev_fix is progress.dev_fix:
        return progress
    return attrs.evolve(progress, resume=resume, dev_fix=dev_fix)


def _round_shape(state: PipelineState) -> tuple[object, ...] | None:
    """The round under way: whether its screen is due, the gates still to run, the one
    started, what failed so far, and where a pass goes."""
    round_ = state.gating.round
    if round_ is None:
        return None
    failed = tuple(f.action for f in round_.failures)
    return (round_.screen_due, round_.pending, round_.in_flight, failed, round_.then, round_.after)


_AFTER_INTERRUPTION: Final[_Outcomes] = (
    (0, (RunResumed(checkpoint_sequence=None, at=_AT),)),
    (0, (RunAbandoned(reason="given up", at=_AT),)),
)
_ANY_STEP: Final[_Outcomes] = (
    (0, (RunInterrupted(reason="SIGINT", at=_AT), RunResumed(checkpoint_sequence=None, at=_AT))),
    (
        0,
        (
            WorkspaceIoError(
                kind=WorkspaceErrorKind.WRITE, path="file", message="disk full", at=_AT
            ),
        ),
    ),
)
_BUDGET_CHECK: Final[_Outcomes] = (
    *_ANY_STEP,
    (0, (BudgetExceeded(budget=BudgetKind.RUNTIME, detail="spent", at=_AT),)),
)


def _handler_facts(state: PipelineState, effect: Effect) -> _Outcomes:
    """Facts the real handlers and the engine report that the simulated world never does: a
    workspace I/O error in any step, the runtime budget spent as a phase or iteration begins,
    an interruption (then the resumption at once: an interrupted run only waits for it), and
    the resumption of a stopped run, or a person abandoning it."""
    if state.phase is Phase.INTERRUPTED:
        return _AFTER_INTERRUPTION
    if is_terminal(state) or state.phase is Phase.NOT_STARTED:
        return ()
    return _BUDGET_CHECK if measures_runtime(effect) else _ANY_STEP


@final
class _Node:
    """A visited state and how it was reached (for witnesses)."""

    __slots__ = ("facts", "parent", "state")

    def __init__(
        self, state: PipelineState, parent: _Node | None, facts: tuple[PipelineEvent, ...]
    ) -> None:
        self.state, self.parent, self.facts = state, parent, facts

    def path(self) -> list[PipelineEvent]:
        """The facts from the first one to this state."""
        chunks: list[tuple[PipelineEvent, ...]] = []
        node: _Node | None = self
        while node is not None:
            chunks.append(node.facts)
            node = node.parent
        return [fact for chunk in reversed(chunks) for fact in chunk]


def explore() -> PhaseGraph:
    """The phase graph of the orchestration, found by running it (see the module's doc)."""
    edges: dict[Edge, tuple[PipelineEvent, ...]] = {}
    for config in worlds():
        # The world's outcomes depend on the effect alone, and most effects recur in many
        # states: each is carried out once (this halves the runs of the world).
        world: dict[Effect, _Outcomes] = {}
        seen: set[tuple[object, ...]] = set()
        queue: deque[_Node] = deque([_Node(PipelineState(), None, ())])
        while queue:
            node = queue.popleft()
            if len(seen) > _MAX_STATES:
                raise RuntimeError("the phase exploration does not end; check _shape")
            if is_complete(node.state) and node.state.phase is Phase.COMPLETE:
                continue
            effect = next_effect(node.state)
            outcomes = world.get(effect)
            if outcomes is None:
                outcomes = world[effect] = _with_shared(_outcomes(config, effect))
            # folded[i]: the state after the first i facts of the outcome before.
            folded = [node.state]
            for shared, facts in (*outcomes, *_handler_facts(node.state, effect)):
                del folded[shared + 1 :]
                state = folded[shared]
                for index in range(shared, len(facts)):
                    fact, before = facts[index], state.progress.phase
                    state = reduce(state, fact)
                    folded.append(state)
                    if state.progress.phase is not before:
                        edge = Edge(
                            source=before, target=state.progress.phase, fact=WIRE_TAGS[type(fact)]
                        )
                        if edge not in edges:
                            edges[edge] = (*node.path(), *facts[: index + 1])
                shape = _shape(state)
                if shape not in seen:
                    seen.add(shape)
                    queue.append(_Node(state, node, facts))
    # Every state but the first is reached by facts, and a phase a fact leads to is an edge's.
    phases = {Phase.NOT_STARTED, *(edge.target for edge in edges)}
    return PhaseGraph(phases=frozenset(phases), edges=frozenset(edges), witnesses=edges)
