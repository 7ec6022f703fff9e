"""The durable runner: every step's facts are committed to the store before the next effect.

``run_durable`` starts a run or resumes one: state = the latest valid checkpoint + the fold of
the events after it. The runner holds no policy: it asks ``next_effect``, calls the handler
(lifecycle hooks included: they are ``RunHook`` effects), appends the facts with the expected
sequence, folds them, and saves checkpoints when orchestration asks for one. It tells one
:class:`RunObserver` what it does and asks one :class:`RunWorld` what no effect can carry
(that this process resumed the run, and what reached it from outside before a prompt).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.effects import (
    Effect,
    MaterializePrompt,
    RunHook,
    SaveCheckpoint,
    StartRun,
    Terminate,
    is_redoable,
)
from pipeline.core.serialization import CheckpointError, checkpoint_state, encode_checkpoint
from pipeline.core.state import AFTER_POINTS, Phase, PipelineState, is_complete, is_terminal
from pipeline.engine._interrupt import Interrupted, Interruption
from pipeline.engine._observer import Observers, RunObserver, span_of
from pipeline.engine._world import RunWorld
from pipeline.events import (
    CheckpointSaved,
    HookPoint,
    Instant,
    LogPosition,
    PipelineEvent,
    RunId,
    RunInterrupted,
    RunResumed,
    RunStarted,
)
from pipeline.handlers import EffectHandler, facts_of, steps_of
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import Folded, RunStore, UnknownRunError
from pipeline.orchestration import next_effect
from pipeline.reducers import reduce

__all__ = ["DurableRun", "RunOptions", "load_state", "run_durable", "utc_now"]


def utc_now() -> Instant:
    """The current UTC time: the engine's clock."""
    return Instant(datetime.now(UTC))


@frozen(kw_only=True)
class DurableRun:
    """Where a durable run stands after ``run_durable`` returns."""

    run_id: RunId
    state: PipelineState
    resumed_from: int | None
    """The sequence of the checkpoint the run resumed from (None: a new run, or a full replay)."""
    effects: int


def load_state(
    store: RunStore, run_id: RunId, on_warning: Callable[[str], None] | None = None
) -> tuple[PipelineState, int | None]:
    """The run's state: the newest checkpoint that verifies, plus the fold of its tail.

    A checkpoint that fails (checksum, format, content) is reported through ``on_warning`` and
    skipped; with none usable the whole log is folded.
    """
    state, used = PipelineState(), None
    for checkpoint in store.checkpoints(run_id):
        try:
            state = checkpoint_state(checkpoint, f"checkpoint {checkpoint.sequence} of {run_id}")
        except CheckpointError as error:
            if on_warning is not None:
                on_warning(f"{error}; rebuilding from the event log instead")
            continue
        used = checkpoint.sequence
        break
    for event in store.read(run_id, state.sequence):
        state = reduce(state, event)
    return state, used


@frozen(kw_only=True)
class RunOptions:
    """How the engine drives a run: its clock, its bound, how it is stopped, what it masks."""

    clock: Callable[[], Instant] = utc_now
    """Stamps the facts the engine records itself (checkpoints, resumes, interruptions)."""
    max_effects: int | None = None
    """Stop after this many effects, hooks aside (None: run until complete); a later call
    resumes."""
    interruption: Interruption | None = None
    """Where a request to stop arrives (None: nobody can ask)."""
    redactor: Redactor | None = None
    """Masks every fact before it is traced, stored, folded or shown (None: the secret
    variables of this process's environment and the known token shapes)."""


_DEFAULTS = RunOptions()


_NOBODY = Observers()
"""The observer of a run nobody watches: no observer told anything."""


def run_durable(
    store: RunStore,
    handler: EffectHandler,
    *,
    run_id: RunId | None = None,
    observer: RunObserver | None = None,
    world: RunWorld | None = None,
    options: RunOptions = _DEFAULTS,
) -> DurableRun:
    """Start a new run (``run_id`` None) or resume ``run_id``, and run until it is complete
    or ``options.max_effects`` effects have been carried out (a later call resumes it).

    ``observer`` is told everything the run does: each effect as it is carried out (the
    start of a new run and checkpoints included), each fact stored with the state it folded
    to, each warning, and a span around each effect (see :class:`RunObserver`; combine
    several with :class:`Observers`). ``world`` answers what the run asks of the world beside
    its effects: the facts it resumes in, the news before each prompt (see
    :class:`RunWorld`). The lifecycle hooks are effects: ``handler`` runs them.

    With ``options.interruption``, a request stops the run cleanly: the handler at work is
    abandoned, ``RunInterrupted`` is recorded, the interruption checkpoint saved, and the
    run returned in the ``INTERRUPTED`` phase, ready to be resumed. Every fact (a handler's
    or the world's) passes through ``options.redactor`` before it is traced, stored, folded
    or shown, so no secret reaches the log, a checkpoint, a span or an output.
    """
    observer = _NOBODY if observer is None else observer
    clock, max_effects = options.clock, options.max_effects
    interruption = Interruption() if options.interruption is None else options.interruption
    redactor = (
        Redactor.from_environment(os.environ) if options.redactor is None else options.redactor
    )
    resumed_from = None
    if run_id is None:
        state = PipelineState()
        effect = next_effect(state)
        assert isinstance(effect, StartRun)
        observer.effect(effect)
        with span_of(observer, None, 0, effect) as traced:
            started = _masked(redactor, facts_of(handler(effect)))
            traced.record(started)
        if not started or not isinstance(started[0], RunStarted):
            raise PipelineError("the StartRun handler must report RunStarted first")
        run_id = started[0].run_id
        state = _commit(store, run_id, state, started, observer)
    else:
        state, resumed_from = load_state(store, run_id, observer.warning)
        if state.sequence == 0:
            known = tuple(run.run_id for run in store.runs())
            raise UnknownRunError(f"no run {run_id!r} in the store", known)
        # An interrupted run is stopped, not finished: resuming it is what it waits for.
        if state.phase is Phase.INTERRUPTED or not is_complete(state):
            cp = None if resumed_from is None else LogPosition(resumed_from)
            resumed: list[PipelineEvent] = [RunResumed(checkpoint_sequence=cp, at=clock())]
            resumed += _masked(redactor, world.resumed() if world else ())
            state = _commit(store, run_id, state, resumed, observer)
    effects = hooks_in_a_row = 0
    while not isinstance(effect := next_effect(state), Terminate):
        follows = _follows(effect)
        if not follows and max_effects is not None and effects >= max_effects:
            break
        if isinstance(effect, MaterializePrompt) and world is not None:
            news = _masked(redactor, world.news(state))
            if news:
                state = _commit(store, run_id, state, news, observer)
                continue  # the prompt is decided again, holding the news
        # Hooks are not counted: the bound is on the run's own steps.
        if isinstance(effect, RunHook):
            hooks_in_a_row += 1
            if hooks_in_a_row > 2 * len(state.run.loop.hooks if state.run else ()) + 2:
                raise PipelineError(f"hook {effect.hook.name!r} stays due after its own facts")
        else:
            hooks_in_a_row = 0
            effects += 1
        observer.effect(effect)
        steps = _carry_out(store, handler, run_id, state, effect, interruption, clock)
        with span_of(observer, run_id, state.sequence, effect) as traced:
            state, recorded = _record(
                store, run_id, state, effect, steps, interruption, redactor, observer
            )
            traced.record(recorded)
    return DurableRun(run_id=run_id, state=state, resumed_from=resumed_from, effects=effects)


def _follows(effect: Effect) -> bool:
    """Whether ``effect`` is a hook that watches what came before it (an invocation, the
    run's end): it runs whatever the bound on effects, as the step it watches did."""
    return isinstance(effect, RunHook) and effect.hook.point in _FOLLOWING


_FOLLOWING = frozenset({*AFTER_POINTS, HookPoint.RUN_END})


def _masked(redactor: Redactor, facts: Sequence[PipelineEvent]) -> list[PipelineEvent]:
    """``facts`` with every secret masked, before they are traced, stored, folded or shown."""
    return [redactor.event(fact) for fact in facts]


def _record(
    store: RunStore,
    run_id: RunId,
    state: PipelineState,
    effect: Effect,
    steps: Iterator[Sequence[PipelineEvent]],
    interruption: Interruption,
    redactor: Redactor,
    observer: RunObserver,
) -> tuple[PipelineState, list[PipelineEvent]]:
    """Store and fold each step of an effect's facts, secrets masked, before the next is asked
    for; the state after them, and every fact recorded. A run that a step left stopped takes
    no interruption asked for meanwhile: there is nothing left to interrupt."""
    flush = not is_redoable(effect)
    recorded: list[PipelineEvent] = []
    for step in steps:
        facts = _masked(redactor, step)
        recorded.extend(facts)
        state = _commit(store, run_id, state, facts, observer, flush=flush)
        if interruption.reason is not None and is_terminal(state):
            break
    return state, recorded


def _carry_out(
    store: RunStore,
    handler: EffectHandler,
    run_id: RunId,
    state: PipelineState,
    effect: Effect,
    interruption: Interruption,
    clock: Callable[[], Instant],
) -> Iterator[Sequence[PipelineEvent]]:
    """The steps of facts of one effect: a checkpoint the runner saves itself, an
    interruption asked for before it starts, or what the handler reports, step by step (each
    is recorded before the handler goes on; an interruption cuts it short). The handler runs
    armed for interruption, never while a step is being recorded."""
    if isinstance(effect, SaveCheckpoint):
        store.save_checkpoint(run_id, encode_checkpoint(state))
        yield [
            CheckpointSaved(
                trigger=effect.trigger, sequence=LogPosition(state.sequence), at=clock()
            )
        ]
        return
    if interruption.reason is not None and not is_terminal(state):
        yield [RunInterrupted(reason=interruption.reason, at=clock())]
        return
    # A hook runs to its end, a stop asked for meanwhile waiting for it: hooks watch and
    # guard steps, and one at a run's end has no run left to interrupt.
    armed = contextlib.nullcontext if isinstance(effect, RunHook) else interruption.armed
    try:
        with armed():
            steps = steps_of(handler(effect))
        while True:
            with armed():
                step = next(steps, None)
            if step is None:
                return
            yield step
    except Interrupted as stopped:
        yield [RunInterrupted(reason=str(stopped), at=clock())]


def _commit(
    store: RunStore,
    run_id: RunId,
    state: PipelineState,
    facts: list[PipelineEvent],
    observer: RunObserver,
    *,
    flush: bool = True,
) -> PipelineState:
    """Append the facts (durable before anything acts on them; the store writes its
    projections in the same transaction), then report them folded. The fold is pure, so
    folding before the append changes nothing: nothing acts on the new state until the facts
    are stored; the store gets them :class:`Folded`, so its projections use this fold rather
    than make their own. ``flush`` False (facts of a redoable effect) commits without syncing
    to disk: a power cut may lose them, and orchestration then asks for the same effect
    again."""
    if not facts:
        return state
    folded = Folded(state, facts)
    store.append(run_id, state.sequence, folded, flush=flush)
    for after, fact in zip(folded.states, folded, strict=True):
        observer.event(after, fact)
    return folded.after
