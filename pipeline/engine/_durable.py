"""The durable runner: every step's facts are committed to the store before the next effect.

``run_durable`` starts a run or resumes one: state = the latest valid checkpoint + the fold of
the events after it. The runner holds no policy: it asks ``next_effect``, calls the handler,
appends the facts with the expected sequence, folds them, and saves checkpoints when
orchestration asks for one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.effects import (
    Effect,
    MaterializePrompt,
    SaveCheckpoint,
    StartRun,
    Terminate,
    is_redoable,
)
from pipeline.core.serialization import CheckpointError, checkpoint_state, encode_checkpoint
from pipeline.core.state import Phase, PipelineState, is_complete, is_terminal
from pipeline.engine._interrupt import Interrupted, Interruption
from pipeline.events import (
    CheckpointSaved,
    HookSpec,
    Instant,
    LogPosition,
    PipelineEvent,
    RunId,
    RunInterrupted,
    RunResumed,
    RunStarted,
)
from pipeline.handlers import EffectHandler, EffectTracer, facts_of, steps_of
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import RunStore, UnknownRunError
from pipeline.orchestration import hook_due, hooks_after, next_effect, run_end_hook
from pipeline.reducers import reduce

__all__ = ["DurableRun", "HookRunner", "load_state", "run_durable", "utc_now"]

HookRunner = Callable[[HookSpec, PipelineState, Effect | None], Sequence[PipelineEvent]]
"""Runs a lifecycle hook before ``Effect`` (None: once the run has ended) and reports what
happened (``HookRan``)."""


def utc_now() -> Instant:
    """The current UTC time: the engine's clock."""
    return Instant(datetime.now(UTC))


@frozen
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


def run_durable(
    store: RunStore,
    handler: EffectHandler,
    *,
    run_id: RunId | None = None,
    clock: Callable[[], Instant] = utc_now,
    max_effects: int | None = None,
    on_event: Callable[[PipelineState, PipelineEvent], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    interruption: Interruption | None = None,
    tracer: EffectTracer | None = None,
    redactor: Redactor | None = None,
    on_effect: Callable[[Effect], None] | None = None,
    on_resume: Callable[[], Sequence[PipelineEvent]] | None = None,
    on_prompt: Callable[[PipelineState], Sequence[PipelineEvent]] | None = None,
    on_hook: HookRunner | None = None,
) -> DurableRun:
    """Start a new run (``run_id`` None) or resume ``run_id``, and run until it is complete
    or ``max_effects`` effects have been carried out (a later call resumes it).

    With ``interruption``, a request stops the run cleanly: the handler at work is abandoned,
    ``RunInterrupted`` is recorded, the interruption checkpoint saved, and the run returned in
    the ``INTERRUPTED`` phase, ready to be resumed. With ``tracer``, every effect carried out
    (checkpoints included) is one span holding the facts it produced.

    Every fact a handler reports passes through ``redactor`` (default: the secret variables of
    this process's environment and the known token shapes) before it is traced, stored, folded
    or shown, so no secret reaches the log, a checkpoint, a span or an output. ``on_effect``
    sees each effect as it is carried out (the start of a new run and checkpoints included).
    ``on_resume`` reports, when a run resumes, the facts of the world it goes on in (the
    runtime: what its agents run in now), recorded right after ``RunResumed``. ``on_prompt``
    reports, before each prompt is made, what reached the run from outside meanwhile (a
    person's guidance), so that the prompt is made from a state that holds it. ``on_hook``
    runs a lifecycle hook the orchestration finds due (before an effect, after an
    invocation, once the run has ended) and reports its ``HookRan``.
    """
    interruption = Interruption() if interruption is None else interruption
    redactor = Redactor.from_environment(os.environ) if redactor is None else redactor
    resumed_from = None
    if run_id is None:
        state = PipelineState()
        effect = next_effect(state)
        assert isinstance(effect, StartRun)
        if on_effect is not None:
            on_effect(effect)
        started = _observed(tracer, None, 0, effect, lambda: facts_of(handler(effect)), redactor)
        if not started or not isinstance(started[0], RunStarted):
            raise PipelineError("the StartRun handler must report RunStarted first")
        run_id = started[0].run_id
        state = _commit(store, run_id, state, started, on_event)
    else:
        state, resumed_from = load_state(store, run_id, on_warning)
        if state.sequence == 0:
            known = tuple(run.run_id for run in store.runs())
            raise UnknownRunError(f"no run {run_id!r} in the store", known)
        # An interrupted run is stopped, not finished: resuming it is what it waits for.
        if state.phase is Phase.INTERRUPTED or not is_complete(state):
            cp = None if resumed_from is None else LogPosition(resumed_from)
            resumed: list[PipelineEvent] = [RunResumed(cp, clock())]
            resumed += _masked(redactor, on_resume() if on_resume else ())
            state = _commit(store, run_id, state, resumed, on_event)
    if on_hook is None and state.run is not None and state.run.loop.hooks:
        # A hook that blocks or suspends is a promise to the person: never skipped silently.
        raise PipelineError(
            f"run {run_id} has lifecycle hooks ([[hooks]], [notify]) and nothing runs them: "
            "pass on_hook to run_durable"
        )
    effects = hooks_in_a_row = 0
    while not is_complete(state):
        if max_effects is not None and effects >= max_effects:
            break
        effect = next_effect(state)
        if isinstance(effect, MaterializePrompt) and on_prompt is not None:
            news = _masked(redactor, on_prompt(state))
            if news:
                state = _commit(store, run_id, state, news, on_event)
                effect = next_effect(state)
        # A stop asked for skips the hooks: the effect's own handling records the stop.
        if on_hook is not None and interruption.reason is None:
            hook = hook_due(state, effect)
            if hook is not None:
                hooks_in_a_row += 1
                if hooks_in_a_row > 2 * len(state.run.loop.hooks if state.run else ()) + 2:
                    raise PipelineError(f"hook {hook.name!r} stays due after its own facts")
                ran = on_hook(hook, state, effect)
                state = _commit(store, run_id, state, _masked(redactor, ran), on_event)
                continue  # the hook's fact may change what comes next
        hooks_in_a_row = 0
        if isinstance(effect, Terminate):
            break
        effects += 1
        if on_effect is not None:
            on_effect(effect)
        steps = _carry_out(store, handler, run_id, state, effect, interruption, clock)
        if tracer is None:
            state, recorded = _record(
                store, run_id, state, effect, steps, interruption, redactor, on_event
            )
        else:
            with tracer.effect(run_id, state.sequence, effect) as span:
                state, recorded = _record(
                    store, run_id, state, effect, steps, interruption, redactor, on_event
                )
                span.record(recorded)
        if on_hook is not None:
            for hook in hooks_after(state, effect, recorded):
                if state.phase is Phase.INTERRUPTED or interruption.reason is not None:
                    break  # suspended, or a stop asked for: these watch, they never hold it
                ran = on_hook(hook, state, effect)
                state = _commit(store, run_id, state, _masked(redactor, ran), on_event)
    ended: set[str] = set()
    while on_hook is not None and (hook := run_end_hook(state)) is not None:
        if hook.name in ended:
            raise PipelineError(f"hook {hook.name!r} stays due after its own facts")
        ended.add(hook.name)
        ran = on_hook(hook, state, None)
        state = _commit(store, run_id, state, _masked(redactor, ran), on_event)
    return DurableRun(run_id, state, resumed_from, effects)


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
    on_event: Callable[[PipelineState, PipelineEvent], None] | None,
) -> tuple[PipelineState, list[PipelineEvent]]:
    """Store and fold each step of an effect's facts, secrets masked, before the next is asked
    for; the state after them, and every fact recorded. A run that a step left stopped takes
    no interruption asked for meanwhile: there is nothing left to interrupt."""
    flush = not is_redoable(effect)
    recorded: list[PipelineEvent] = []
    for step in steps:
        facts = _masked(redactor, step)
        recorded.extend(facts)
        state = _commit(store, run_id, state, facts, on_event, flush=flush)
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
        yield [CheckpointSaved(effect.trigger, LogPosition(state.sequence), clock())]
        return
    if interruption.reason is not None and not is_terminal(state):
        yield [RunInterrupted(interruption.reason, clock())]
        return
    try:
        with interruption.armed():
            steps = steps_of(handler(effect))
        while True:
            with interruption.armed():
                step = next(steps, None)
            if step is None:
                return
            yield step
    except Interrupted as stopped:
        yield [RunInterrupted(str(stopped), clock())]


def _observed(
    tracer: EffectTracer | None,
    run_id: RunId | None,
    sequence: int,
    effect: Effect,
    carry_out: Callable[[], list[PipelineEvent]],
    redactor: Redactor,
) -> list[PipelineEvent]:
    """The facts of carrying ``effect`` out, secrets masked, inside the tracer's span when
    there is one. This is the one place every handler's facts pass before anything keeps them."""
    if tracer is None:
        return _masked(redactor, carry_out())
    with tracer.effect(run_id, sequence, effect) as span:
        facts = _masked(redactor, carry_out())
        span.record(facts)
    return facts


def _commit(
    store: RunStore,
    run_id: RunId,
    state: PipelineState,
    facts: list[PipelineEvent],
    on_event: Callable[[PipelineState, PipelineEvent], None] | None,
    *,
    flush: bool = True,
) -> PipelineState:
    """Append the facts (durable before anything acts on them; the store writes its
    projections in the same transaction), then report them folded. The fold is pure, so
    folding before the append changes nothing: nothing acts on the new state until the facts
    are stored. ``flush`` False (facts of a redoable effect) commits without syncing to
    disk: a power cut may lose them, and orchestration then asks for the same effect again."""
    if not facts:
        return state
    states: list[PipelineState] = []
    current = state
    for fact in facts:
        current = reduce(current, fact)
        states.append(current)
    store.append(run_id, state.sequence, facts, flush=flush)
    if on_event is not None:
        for folded, fact in zip(states, facts, strict=True):
            on_event(folded, fact)
    return current
