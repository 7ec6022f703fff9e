"""The screen of a run's changes, first in final validation's round (pure).

The run records where its changes start (``ScreenBaseRecorded``, at its start and after a
rebase). A run whose policy screens (``[tamper]`` or ``[postconditions]``) opens every final
round with the screen; ``ChangesScreened`` reports its hits, and each hit acts as its policy
says (a tamper hit by ``[tamper]``'s ``on_hit`` or per-detector ``actions``, a postcondition's
by ``[postconditions]``'s ``on_failure``; a screen cut short only warns). Hits of one action
make one failure of the round, named after the screen, so they block, warn or stop exactly as
a gate's failure does (``_gates``).
"""

from __future__ import annotations

from typing import Final

from attrs import evolve

from pipeline.core.state import (
    SCREEN,
    GateFailure,
    PipelineState,
    Step,
    TerminationReason,
)
from pipeline.events import (
    POSTCONDITION_KINDS,
    ChangesScreened,
    GateAction,
    LoopPolicy,
    ScreenBaseRecorded,
    ScreenHit,
    ScreenKind,
    ScreenScope,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._gates import resolve_round
from pipeline.reducers._transitions import finalize

__all__ = ["changes_screened", "screen_action", "screen_base_recorded"]

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
