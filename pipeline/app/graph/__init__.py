"""The phase graph of the pipeline, found by running its orchestration, and drawn; and the
drawing of a topology, the workflow of a user's own."""

from pipeline.app.graph._draw import arrows, to_dot, to_mermaid, to_svg
from pipeline.app.graph._explore import (
    Edge,
    PhaseGraph,
    explore,
    phase_changes,
)
from pipeline.app.graph._run_drawing import run_svg, run_topology
from pipeline.app.graph._stored import STORED_GRAPH, dump_edges, stored_edges
from pipeline.app.graph._topology import topology_dot, topology_mermaid, topology_svg

__all__ = [
    "STORED_GRAPH",
    "Edge",
    "PhaseGraph",
    "arrows",
    "dump_edges",
    "explore",
    "phase_changes",
    "run_svg",
    "run_topology",
    "stored_edges",
    "to_dot",
    "to_mermaid",
    "to_svg",
    "topology_dot",
    "topology_mermaid",
    "topology_svg",
]
