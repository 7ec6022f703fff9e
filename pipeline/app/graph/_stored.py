"""The explored phase graph as shipped with the package (``phase_graph.json``), so that
``ralph graph`` draws it at once; ``scripts/generate_graph.py`` writes it from
:func:`~pipeline.app.graph.explore` and a test keeps it equal to a fresh exploration."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Final

import orjson

from pipeline.app.graph._explore import Edge
from pipeline.core.serialization import CONVERTER

__all__ = ["STORED_GRAPH", "dump_edges", "stored_edges"]

STORED_GRAPH: Final = Path(__file__).with_name("phase_graph.json")
"""Where the shipped graph lives, beside this module (the generator writes it here)."""


def dump_edges(edges: frozenset[Edge]) -> bytes:
    """``edges`` as the shipped file holds them: sorted, one JSON array, a newline at the end."""
    data = CONVERTER.unstructure(sorted(edges), list[Edge])
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


@functools.cache
def stored_edges() -> frozenset[Edge]:
    """The shipped graph's edges."""
    edges: list[Edge] = CONVERTER.structure(orjson.loads(STORED_GRAPH.read_bytes()), list[Edge])
    return frozenset(edges)
