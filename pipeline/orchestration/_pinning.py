"""Where a run's gates and blocking hooks take their checks from (pure)."""

from __future__ import annotations

from pipeline.core.state import PipelineState
from pipeline.events import GatePin

__all__ = ["pinned_to"]


def pinned_to(state: PipelineState) -> str | None:
    """The commit whose tests, test configuration and named files a gate (or a blocking
    hook) of the run runs with: the base the run's changes start from (moved by a rebase to
    the tip it rebased onto, the person's later commits), or None when the run recorded
    ``pin = "off"`` or started in a repository with no commit (nothing to pin to)."""
    run = state.run
    if run is None or run.loop.pin is not GatePin.BASE:
        return None
    return state.gating.run_base
