"""Where a run's gates, blocking hooks and merge-queue gates take their checks from, and which
gates the merge queue runs (pure)."""

from __future__ import annotations

from pipeline.core.state import PipelineState
from pipeline.events import GateBoundary, GatePin, GateSpec

__all__ = ["integration_gates", "landing_pinned_to", "pinned_to"]

_FINAL_BOUNDARIES = frozenset({GateBoundary.FINAL, GateBoundary.COMPLETION})


def pinned_to(state: PipelineState) -> str | None:
    """The commit whose tests, test configuration and named files a gate (or a blocking
    hook) of the run runs with: the base the run's changes start from (moved by a rebase to
    the tip it rebased onto, the person's later commits), or None when the run recorded
    ``pin = "off"`` or started in a repository with no commit (nothing to pin to)."""
    run = state.run
    if run is None or run.loop.pin is not GatePin.BASE:
        return None
    return state.gating.run_base


def landing_pinned_to(state: PipelineState) -> str | None:
    """The commit whose tests, test configuration and named files the merge queue's gates
    run the replayed branch with: the target's head the branch was replayed onto. Not the
    run's base: the person's commits on the target since the run started are the person's
    too (a test added there must judge the landing, and a test changed there must not be
    undone by the run's older copy). None when the run recorded ``pin = "off"`` (its
    agent's test changes were the person's wish) or nothing was replayed yet."""
    run, now = state.run, state.integration
    if run is None or now is None or run.loop.pin is not GatePin.BASE:
        return None
    return now.onto


def integration_gates(state: PipelineState) -> tuple[GateSpec, ...]:
    """The gates an integration of the run runs on the replayed head, in order: those of
    ``final`` and ``completion`` (what judged the run done judges the replay)."""
    if state.run is None:
        return ()
    return tuple(g for g in state.run.loop.gates if _FINAL_BOUNDARIES.intersection(g.on))
