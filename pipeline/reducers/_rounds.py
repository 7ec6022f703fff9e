"""The rounds of gates a run opens (pure): see ``_gates``.

Final validation's round screens the run's changes and runs the ``final`` gates (and the
``completion`` ones when an agent's completion was accepted). A developer task that reports
work (a development iteration, a hat's activation, a review fix) opens a round before its work
is committed: the screen of that task's changes and the ``iteration`` gates (and the
``commit`` ones when a commit follows).
"""

from __future__ import annotations

from pipeline.core.state import GateRound, GateThen, Phase, PipelineState
from pipeline.events import GateBoundary, ScreenScope

__all__ = ["final_round", "task_round"]


def final_round(state: PipelineState) -> GateRound | None:
    """The round final validation runs now: the screen of the run's changes when the run
    screens them, then the gates that apply (None: neither)."""
    run = state.run
    if run is None:
        return None
    claimed = state.intake.completion_claimed
    pending: list[tuple[str, GateBoundary]] = []
    for gate in run.loop.gates:
        if claimed and GateBoundary.COMPLETION in gate.on:
            pending.append((gate.name, GateBoundary.COMPLETION))
        elif GateBoundary.FINAL in gate.on:
            pending.append((gate.name, GateBoundary.FINAL))
    screen = run.loop.screens and state.gating.base_recorded
    if not pending and not screen:
        return None
    return GateRound(pending=tuple(pending), screen_due=screen)


def task_round(state: PipelineState, after: Phase | None) -> GateRound | None:
    """The round a developer task that did work opens before its work goes on: the tamper
    screen of its changes, then its ``topic`` gates (a hat's activation published a matching
    topic), its ``commit`` gates (only when a commit follows: ``after`` is where the run goes
    after it; None, a read-only workflow, commits nothing) and its ``iteration`` gates
    (None: none applies)."""
    run = state.run
    if run is None:
        return None
    # The topics this activation published wait in routing until the round is over.
    iteration = state.progress.iteration
    published = [t.topic for t in state.routing.pending if t.activation == iteration > 0]
    pending: list[tuple[str, GateBoundary]] = []
    for gate in run.loop.gates:
        if GateBoundary.TOPIC in gate.on and any(gate.on_topic(t) for t in published):
            pending.append((gate.name, GateBoundary.TOPIC))
        elif after is not None and GateBoundary.COMMIT in gate.on:
            pending.append((gate.name, GateBoundary.COMMIT))
        elif GateBoundary.ITERATION in gate.on:
            pending.append((gate.name, GateBoundary.ITERATION))
    screen = run.loop.tamper is not None and state.gating.base_recorded
    if not pending and not screen:
        return None
    then = GateThen.DEVELOP if after is None else GateThen.COMMIT
    return GateRound(
        pending=tuple(pending),
        screen_due=screen,
        scope=ScreenScope.ITERATION,
        then=then,
        after=after,
    )
