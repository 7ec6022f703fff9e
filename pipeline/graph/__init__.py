"""The phase graph of the pipeline, found by running its orchestration, and drawn."""

from pipeline.graph._draw import arrows, to_dot, to_mermaid
from pipeline.graph._explore import (
    RUNTIME_BUDGET_CHECKS,
    Edge,
    PhaseGraph,
    explore,
    phase_changes,
)
from pipeline.graph._stored import STORED_GRAPH, dump_edges, stored_edges

__all__ = [
    "RUNTIME_BUDGET_CHECKS",
    "STORED_GRAPH",
    "Edge",
    "PhaseGraph",
    "arrows",
    "dump_edges",
    "explore",
    "phase_changes",
    "stored_edges",
    "to_dot",
    "to_mermaid",
]
