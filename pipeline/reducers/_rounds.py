"""The round of gates final validation opens (pure): see ``_gates``."""

from __future__ import annotations

from pipeline.events import GateBoundary
from pipeline.state import GateRound, PipelineState

__all__ = ["final_round"]


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
