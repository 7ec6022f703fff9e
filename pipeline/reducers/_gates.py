"""Gates: the commands a completion must pass, run by ralph at final validation, and the screen
of the run's changes that comes first in their round (pure).

Final validation opens a **round**: the screen of the run's changes first when the run screens
them (below), then the gates whose boundary applies (``final`` always,
``completion`` when an agent's completion was accepted), in the order the policy lists them;
a round with no gate goes straight to the final check, so a run without gates is as before.
Each gate's command runs (``GateStarted``, then ``GateFinished``); a failure does what its
gate says:

- ``stop`` ends the run at once as ``gate_failed`` (exit 1);
- ``warn`` becomes a ``ralph.gate_warning`` notice to the developer, and the round goes on;
- ``block`` is kept until the round is over: then every blocking failure is a
  ``build.blocked`` notice with the end of the gate's output, the completion claim is spent,
  and development goes on (in a topology, with the hat that worked last). A block costs an
  iteration, so ``max_iterations`` bounds them.

A round that ends with nothing blocking goes on to the final check (``validate``).

The run records where its changes start (``ScreenBaseRecorded``, at its start and after a
rebase). A run whose policy screens (``[tamper]`` or ``[postconditions]``) opens every final
round with the screen; ``ChangesScreened`` reports its hits, and each hit acts as its policy
says (a tamper hit by ``[tamper]``'s ``on_hit`` or per-detector ``actions``, a postcondition's
by ``[postconditions]``'s ``on_failure``; a screen cut short only warns). Hits of one action
make one failure of the round, named after the screen, so they block, warn or stop exactly as
a gate's failure does.
"""

from __future__ import annotations

from typing import Final

from attrs import evolve

from pipeline.core.state import (
    SCREEN,
    Bounce,
    GateFailure,
    GateRound,
    GateThen,
    Gating,
    Intake,
    Notice,
    PipelineState,
    Routing,
    Step,
    TerminationReason,
)
from pipeline.events import (
    POSTCONDITION_KINDS,
    TASK_BLOCKED_TOPIC,
    ChangesScreened,
    GateAction,
    GateFinished,
    GateStarted,
    GateStatus,
    Json,
    LoopPolicy,
    Role,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    ScreenScope,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._escalation import bounced
from pipeline.reducers._iterations import iteration_failed
from pipeline.reducers._notices import add_notice
from pipeline.reducers._routing import back_to_last_hat
from pipeline.reducers._transitions import (
    finalize,
    start_development,
    task_passed,
)

__all__ = [
    "GATE_WARNING_TOPIC",
    "changes_screened",
    "gate_action",
    "gate_finished",
    "gate_started",
    "resolve_round",
    "restored_named",
    "screen_action",
    "screen_base_recorded",
]

GATE_WARNING_TOPIC: Final = "ralph.gate_warning"
"""The notice of a gate whose failure only warns."""


def _head(state: PipelineState) -> tuple[GateRound, str] | None:
    """The round under way and the gate at its head, when a gate is what the run waits for."""
    progress, round_ = state.progress, state.gating.round
    if progress.step is not Step.GATE:
        return None
    if round_ is None or round_.screen_due or not round_.pending:
        return None
    return round_, round_.pending[0][0]


def gate_started(state: PipelineState, event: GateStarted) -> PipelineState:
    """The head gate's command started (again, after a crash: it runs whole again)."""
    head = _head(state)
    if head is None or head[1] != event.gate:
        return anomaly(state, event, f"gate {event.gate!r} is not the one to run")
    round_ = evolve(head[0], in_flight=event.gate)
    return advance(state, gating=evolve(state.gating, round=round_))


def gate_finished(state: PipelineState, event: GateFinished) -> PipelineState:
    """The head gate's command ended: act on a failure as its gate says, and resolve the
    round once no gate is left in it."""
    head = _head(state)
    if head is None or head[1] != event.gate or head[0].in_flight != event.gate:
        return anomaly(state, event, f"gate {event.gate!r} was not started")
    round_ = head[0]
    gating = evolve(state.gating, ran=state.gating.ran + 1)
    failures = round_.failures
    if event.status is not GateStatus.PASSED:
        assert state.run is not None, "a round runs in a started run"
        action = gate_action(state.run.loop, event.gate)
        failure = GateFailure(
            gate=event.gate, action=action, summary=_summary(event), tail=event.tail
        )
        if action is GateAction.STOP:
            ledger = evolve(state.ledger, last_error=failure.summary)
            stopped = evolve(state, gating=evolve(gating, round=None))
            return finalize(stopped, TerminationReason.GATE_FAILED, ledger)
        failures = (*failures, failure)
    round_ = evolve(round_, pending=round_.pending[1:], in_flight=None, failures=failures)
    if round_.pending:
        return advance(state, gating=evolve(gating, round=round_))
    return resolve_round(state, gating, round_)


def gate_action(loop: LoopPolicy, gate: str) -> GateAction:
    """What a failure of ``gate`` does under the run's recorded policy (one it does not name
    blocks)."""
    spec = loop.gate(gate)
    return GateAction.BLOCK if spec is None else spec.on_failure


def resolve_round(state: PipelineState, gating: Gating, round_: GateRound) -> PipelineState:
    """``round_`` is over (``gating`` is the gating part to keep, the round still in it):
    warnings told, then what the round was for (the final check, or the task's commit), or
    development again when something blocked."""
    gating = evolve(gating, round=None)
    intake = state.intake
    warnings = [f for f in round_.failures if f.action is GateAction.WARN]
    for failure in warnings:
        intake = add_notice(intake, _notice(GATE_WARNING_TOPIC, failure))
    gating = evolve(gating, warned=gating.warned + len(warnings))
    blocks = [f for f in round_.failures if f.action is GateAction.BLOCK]
    if not blocks:
        if round_.then is GateThen.VALIDATE:
            validate = evolve(state.progress, step=Step.VALIDATE)
            return advance(state, progress=validate, intake=intake, gating=gating)
        passed = evolve(state, intake=intake, gating=gating)
        return task_passed(passed, round_.after, state.progress)
    for failure in blocks:
        intake = add_notice(intake, _notice(TASK_BLOCKED_TOPIC, failure))
    # The claim did not hold up: the agent must claim again once the gates can pass.
    intake = evolve(intake, completion_claimed=False)
    last = blocks[-1].summary
    gating = evolve(gating, blocked=gating.blocked + 1, last_block=last)
    ledger = evolve(state.ledger, last_error="; ".join(f.summary for f in blocks))
    routing, intake = _drop_held(state, round_, intake)
    routing = back_to_last_hat(routing, TASK_BLOCKED_TOPIC, Json.of(last))
    escalated = bounced(state, Bounce.VALIDATION_FAILED)
    again = evolve(escalated, intake=intake, gating=gating, routing=routing)
    progress = state.progress
    if round_.then is not GateThen.VALIDATE:
        # A task's work that does not hold up is a failed iteration: it is not committed,
        # and too many in a row end the run.
        return iteration_failed(again, progress, ledger)
    return start_development(again, progress, ledger)


def _drop_held(state: PipelineState, round_: GateRound, intake: Intake) -> tuple[Routing, Intake]:
    """A hat's work that did not hold up: the topics its activation published reach no hat
    (the next hat never sees a claim the gates refused); the agent is told which."""
    routing, iteration = state.routing, state.progress.iteration
    if round_.then is GateThen.VALIDATE or iteration == 0:
        return routing, intake
    held = [t.topic for t in routing.pending if t.activation == iteration]
    if not held:
        return routing, intake
    kept = tuple(t for t in routing.pending if t.activation != iteration)
    text = f"Not acted on, since the work was blocked: {', '.join(held)}"
    notice = Notice(topic=TASK_BLOCKED_TOPIC, text=text, role=Role.DEVELOPER)
    return evolve(routing, pending=kept), add_notice(intake, notice)


def _notice(topic: str, failure: GateFailure) -> Notice:
    text = failure.summary if not failure.tail else f"{failure.summary}\n{failure.tail}"
    return Notice(topic=topic, text=text, role=Role.DEVELOPER)


def _summary(event: GateFinished) -> str:
    """One line: which gate, its command, how it ended, how long it took, where its output is."""
    command = " ".join(event.argv)
    seconds = event.duration_ms / 1000
    if event.status is GateStatus.NOT_STARTED:
        how = "could not be started"
    elif event.status is GateStatus.TIMED_OUT:
        how = f"timed out after {seconds:.1f} s"
    else:
        how = f"exited with status {event.exit_code} after {seconds:.1f} s"
    said = f"Gate '{event.gate}' failed: `{command}` {how} (whole output: {event.log_path})"
    if event.pinned is None or not event.restored:
        return said
    return (
        f"{said}; it ran pinned to {event.pinned[:12]}, with the base's "
        f"{restored_named(event.restored)}: your changes to them were not used"
    )


_RESTORED_NAMED: Final = 8
"""Restored files a failure's summary names; the rest are counted."""


def restored_named(restored: tuple[str, ...]) -> str:
    """The files a pinned gate took from the base instead of the work, for a failure's
    summary (a run's gate, or a landing's): the first few named, the rest counted."""
    more = len(restored) - _RESTORED_NAMED
    return ", ".join(restored[:_RESTORED_NAMED]) + (f" and {more} more" if more > 0 else "")


_NAMED: Final = 3
"""Hits named in a failure's one-line summary; the rest are counted there, listed in its tail."""
_LISTED: Final = 40
"""Hits listed in a failure's tail."""
_WAY_OUT: Final = (
    "Put back what the change took from the tests and the protected files. If the task "
    "really asks for it, ask a person first (publish human.interact)."
)


def screen_base_recorded(state: PipelineState, event: ScreenBaseRecorded) -> PipelineState:
    """Where the run's changes are screened from, from now on."""
    if state.run is None:
        return anomaly(state, event, "no run has started")
    gating = state.gating
    # The first base is where the tasks' screens start too; a later one (a rebase) comes
    # after the RebaseSucceeded that moved the tasks' base to the rebased head.
    work_base = gating.work_base if gating.base_recorded else event.sha
    gating = evolve(gating, base_recorded=True, run_base=event.sha, work_base=work_base)
    return advance(state, gating=gating)


def screen_action(loop: LoopPolicy, kind: ScreenKind) -> GateAction:
    """What a hit of ``kind`` does under the run's recorded policy."""
    if kind is ScreenKind.SCREEN_INCOMPLETE:
        return GateAction.WARN
    by_postconditions = kind in POSTCONDITION_KINDS or loop.tamper is None
    if by_postconditions and loop.postconditions is not None:
        return loop.postconditions.on_failure
    if loop.tamper is not None:
        return loop.tamper.action_for(kind)
    return GateAction.BLOCK


def changes_screened(state: PipelineState, event: ChangesScreened) -> PipelineState:
    """The screen reported: its hits join the round's failures, grouped by what they do; a
    stopping hit ends the run at once."""
    progress, round_, run = state.progress, state.gating.round, state.run
    if progress.step is not Step.GATE or round_ is None or not round_.screen_due or run is None:
        return anomaly(state, event, "no screen was asked for")
    if event.scope is not round_.scope:
        return anomaly(state, event, f"the round screens the {round_.scope} scope")
    gating = evolve(state.gating, hits=state.gating.hits + len(event.hits))
    grouped: dict[GateAction, list[ScreenHit]] = {}
    for hit in event.hits:
        grouped.setdefault(screen_action(run.loop, hit.kind), []).append(hit)
    failures = tuple(_failure(action, tuple(hits), event) for action, hits in grouped.items())
    stop = next((f for f in failures if f.action is GateAction.STOP), None)
    if stop is not None:
        ledger = evolve(state.ledger, last_error=stop.summary)
        stopped = evolve(state, gating=evolve(gating, round=None))
        return finalize(stopped, TerminationReason.GATE_FAILED, ledger)
    round_ = evolve(round_, screen_due=False, failures=(*round_.failures, *failures))
    if round_.pending:
        return advance(state, gating=evolve(gating, round=round_))
    return resolve_round(state, gating, round_)


def _failure(
    action: GateAction, hits: tuple[ScreenHit, ...], event: ChangesScreened
) -> GateFailure:
    """One failure of the round for the hits of one action: a summary line naming the first
    few, and a tail listing them with the way out."""
    since = "the empty tree" if event.base is None else event.base[:12]
    whose = "the run's" if event.scope is ScreenScope.RUN else "this task's"
    count = f"{len(hits)} finding" + ("" if len(hits) == 1 else "s")
    named = "; ".join(h.summary for h in hits[:_NAMED])
    more = f"; and {len(hits) - _NAMED} more" if len(hits) > _NAMED else ""
    summary = f"The screen of {whose} changes (since {since}) found {count}: {named}{more}"
    listed = [h.summary for h in hits[:_LISTED]]
    if len(hits) > _LISTED:
        listed.append(f"... and {len(hits) - _LISTED} more")
    if action is not GateAction.WARN:
        listed += ["", _WAY_OUT]
    return GateFailure(gate=SCREEN, action=action, summary=summary, tail="\n".join(listed))
