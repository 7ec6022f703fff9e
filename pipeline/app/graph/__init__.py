"""The phase graph of the pipeline, as the reducers declare it (``pipeline.reducers``), drawn;
and the drawing of a topology, the workflow of a user's own."""

from pipeline.app.graph._draw import to_dot, to_mermaid, to_svg
from pipeline.app.graph._run_drawing import run_svg, run_topology
from pipeline.app.graph._topology import topology_dot, topology_mermaid, topology_svg
from pipeline.reducers import Edge, phase_changes, phase_edges

__all__ = [
    "Edge",
    "phase_changes",
    "phase_edges",
    "run_svg",
    "run_topology",
    "to_dot",
    "to_mermaid",
    "to_svg",
    "topology_dot",
    "topology_mermaid",
    "topology_svg",
]
