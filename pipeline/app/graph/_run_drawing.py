"""A run's path through its graph as SVG (pure: a log in, markup out): the topology it
followed with the hats it woke, or the phase graph with the changes it made."""

from __future__ import annotations

from collections.abc import Sequence

from pipeline.app.graph._draw import to_svg
from pipeline.app.graph._topology import topology_svg
from pipeline.events import HatActivated, LoopPolicy, PipelineEvent, RunStarted
from pipeline.reducers import phase_changes, phase_edges

__all__ = ["run_svg", "run_topology"]


def run_topology(events: Sequence[PipelineEvent]) -> tuple[LoopPolicy, tuple[str, ...]] | None:
    """The policy of a run that followed a topology of its own, and the hats it woke in
    order (its path through that topology); None for a run of the built-in pipeline."""
    policy = next((e.loop for e in events if isinstance(e, RunStarted)), None)
    if policy is None or policy.topology is None:
        return None
    return policy, tuple(e.hat for e in events if isinstance(e, HatActivated))


def run_svg(events: Sequence[PipelineEvent]) -> str:
    """The graph of the run whose log is ``events``, its path in red, as ``ralph graph
    --run RUN --format svg`` draws it."""
    followed = run_topology(events)
    if followed is not None:
        return topology_svg(*followed)
    return to_svg(phase_edges(), phase_changes(events))
