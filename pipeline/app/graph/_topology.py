"""Drawing a topology as Mermaid or Graphviz DOT text (pure: a policy in, text out).

A node per hat (the coordinator a hexagon), a start node, and a node for each way a topic
leaves the hats: the completion promise (a double circle), the cancellation promise, and the
topics nobody takes (reported and dropped). The arrows are the routes of
:func:`pipeline.core.config.topology_routes`: a hat's literal publishes solid, its
default_publishes dashed, its ``<hat>.exhausted`` dotted (in Mermaid, dashed too), each to the
hat the topic wakes. Arrows between the same two nodes in the same style are one arrow
labelled with every topic. ``human.interact`` is not drawn: the person's answer goes back to
the hat that asked.

``path`` is a run's activated hats in order: they are drawn red, and so is each arrow between
two consecutive ones (the first from the start). A step no arrow shows (a topic published
through a pattern, say) is drawn too, red, dashed and unlabelled, so that nothing is hidden.

Hat names and topics come from the user's configuration: every label is escaped, whatever
the validators let through.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from itertools import pairwise
from typing import assert_never, final

from attrs import frozen

from pipeline.app.graph._svg import SvgArrow, SvgNode, arc_svg
from pipeline.core.config import Arrival, Route, Via, topology_routes
from pipeline.events import LoopPolicy, Topology

__all__ = ["topology_dot", "topology_mermaid", "topology_svg"]

_START, _COMPLETE, _CANCELLED, _DROPPED = "start", "complete", "cancelled", "dropped"


class _Shape(enum.Enum):
    START = "start"
    HAT = "hat"
    COORDINATOR = "coordinator"
    END = "end"
    DROPPED = "dropped"


class _Line(enum.Enum):
    SOLID = "solid"
    DASHED = "dashed"
    DOTTED = "dotted"


_LINES = {
    Via.START: _Line.SOLID,
    Via.PUBLISHES: _Line.SOLID,
    Via.DEFAULT: _Line.DASHED,
    Via.EXHAUSTED: _Line.DOTTED,
}


@final
@frozen(kw_only=True)
class _Node:
    id: str
    label: str
    shape: _Shape
    visited: bool


@final
@frozen(kw_only=True)
class _Arrow:
    source: str
    target: str
    topics: tuple[str, ...]
    line: _Line
    taken: bool


def _ids(topology: Topology) -> dict[str, str]:
    # Hat names become labels only: ids of our own cannot clash with Mermaid's keywords.
    return {hat.name: f"hat{index}" for index, hat in enumerate(topology.hats)}


def _target(route: Route, ids: dict[str, str]) -> str | None:
    match route.arrival:
        case Arrival.WAKES | Arrival.COORDINATOR:
            return ids[route.target] if route.target is not None else None
        case Arrival.COMPLETES:
            return _COMPLETE
        case Arrival.CANCELS:
            return _CANCELLED
        case Arrival.DROPPED:
            return _DROPPED
        case Arrival.ASKS:
            return None
        case _:
            assert_never(route.arrival)


def _steps(path: Sequence[str], ids: dict[str, str]) -> list[tuple[str, str]]:
    known = [ids[name] for name in path if name in ids]
    return list(pairwise([_START, *known]))


def _arrows(policy: LoopPolicy, ids: dict[str, str], path: Sequence[str]) -> list[_Arrow]:
    grouped: dict[tuple[str, str, _Line], list[str]] = {}
    for route in topology_routes(policy):
        target = _target(route, ids)
        if target is not None:
            source = _START if route.source is None else ids[route.source]
            topics = grouped.setdefault((source, target, _LINES[route.via]), [])
            if route.topic not in topics:
                topics.append(route.topic)
    steps = set(_steps(path, ids))
    arrows = [
        _Arrow(
            source=source,
            target=target,
            topics=tuple(topics),
            line=line,
            taken=(source, target) in steps,
        )
        for (source, target, line), topics in grouped.items()
    ]
    shown = {(arrow.source, arrow.target) for arrow in arrows}
    for source, target in dict.fromkeys(_steps(path, ids)):
        if (source, target) not in shown:
            arrows.append(
                _Arrow(source=source, target=target, topics=(), line=_Line.DASHED, taken=True)
            )
    return arrows


def _nodes(
    policy: LoopPolicy, ids: dict[str, str], arrows: list[_Arrow], path: Sequence[str]
) -> list[_Node]:
    topology = policy.topology
    assert topology is not None  # only drawn with one
    nodes = [
        _Node(
            id=_START, label="start", shape=_Shape.START, visited=any(name in ids for name in path)
        )
    ]
    for hat in topology.hats:
        shape = _Shape.COORDINATOR if hat.name == topology.coordinator else _Shape.HAT
        nodes.append(_Node(id=ids[hat.name], label=hat.name, shape=shape, visited=hat.name in path))
    targets = {arrow.target for arrow in arrows}
    ends = (
        (_COMPLETE, policy.completion_promise, _Shape.END),
        (_CANCELLED, policy.cancellation_promise, _Shape.END),
        (_DROPPED, "reported and dropped", _Shape.DROPPED),
    )
    for node_id, label, shape in ends:
        if node_id in targets and label is not None:
            nodes.append(_Node(id=node_id, label=label, shape=shape, visited=False))
    return nodes


def _drawing(policy: LoopPolicy, path: Sequence[str]) -> tuple[list[_Node], list[_Arrow]]:
    topology = policy.topology
    if topology is None:
        return [], []
    ids = _ids(topology)
    arrows = _arrows(policy, ids, path)
    return _nodes(policy, ids, arrows, path), arrows


def _mermaid_text(text: str) -> str:
    # Mermaid reads #<code>; as a character: quotes, brackets, pipes and markup stay text.
    return "".join(
        c if c.isascii() and (c.isalnum() or c in " _.:-") else f"#{ord(c)};" for c in text
    )


_MERMAID_SHAPES = {
    _Shape.START: ('(("', '"))'),
    _Shape.HAT: ('["', '"]'),
    _Shape.COORDINATOR: ('{{"', '"}}'),
    _Shape.END: ('((("', '")))'),
    _Shape.DROPPED: ('>"', '"]'),
}
_MERMAID_LINES = {_Line.SOLID: "-->", _Line.DASHED: "-.->", _Line.DOTTED: "-.->"}


def topology_mermaid(policy: LoopPolicy, path: Sequence[str] = ()) -> str:
    """A Mermaid flowchart of the policy's topology; ``path``'s hats and steps in red."""
    nodes, arrows = _drawing(policy, path)
    lines = ["flowchart LR"]
    for node in nodes:
        opening, closing = _MERMAID_SHAPES[node.shape]
        lines.append(f"    {node.id}{opening}{_mermaid_text(node.label)}{closing}")
    taken = []
    for index, arrow in enumerate(arrows):
        label = "<br>".join(map(_mermaid_text, arrow.topics))
        labelled = f'|"{label}"| ' if label else " "
        lines.append(f"    {arrow.source} {_MERMAID_LINES[arrow.line]}{labelled}{arrow.target}")
        if arrow.taken:
            taken.append(str(index))
    visited = [node.id for node in nodes if node.visited]
    if visited:
        lines.append("    classDef visited stroke:#d00,stroke-width:3px")
        lines.append(f"    class {','.join(visited)} visited")
    if taken:
        lines.append(f"    linkStyle {','.join(taken)} stroke:#d00,stroke-width:3px")
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    # Inside a quoted DOT string only \ and " are special to the parser; the renderer reads
    # \n, \l and the like, so a backslash is doubled; other control characters are replaced.
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return "".join("\ufffd" if ord(c) < 32 or ord(c) == 127 else c for c in escaped)


_DOT_SHAPES = {
    _Shape.START: ["shape=circle"],
    _Shape.HAT: [],
    _Shape.COORDINATOR: ["shape=hexagon"],
    _Shape.END: ["shape=doublecircle"],
    _Shape.DROPPED: ["style=dashed"],
}


def topology_dot(policy: LoopPolicy, path: Sequence[str] = ()) -> str:
    """A Graphviz digraph of the policy's topology; ``path``'s hats and steps in red."""
    nodes, arrows = _drawing(policy, path)
    lines = ["digraph topology {", "    rankdir=LR;", "    node [shape=box, style=rounded];"]
    for node in nodes:
        attributes = [f'label="{_dot_text(node.label)}"', *_DOT_SHAPES[node.shape]]
        if node.visited:
            attributes += ["color=red", "penwidth=2"]
        lines.append(f"    {node.id} [{', '.join(attributes)}];")
    for arrow in arrows:
        attributes = []
        if arrow.topics:
            attributes.append('label="' + "\\n".join(map(_dot_text, arrow.topics)) + '"')
        if arrow.line is not _Line.SOLID:
            attributes.append(f"style={arrow.line.value}")
        if arrow.taken:
            attributes += ["color=red", "penwidth=2.5"]
        suffix = f" [{', '.join(attributes)}]" if attributes else ""
        lines.append(f"    {arrow.source} -> {arrow.target}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def topology_svg(policy: LoopPolicy, path: Sequence[str] = ()) -> str:
    """An SVG arc diagram of the policy's topology (start, hats, ends); ``path``'s hats and
    steps in red."""
    nodes, arrows = _drawing(policy, path)
    return arc_svg(
        [SvgNode(id=node.id, label=node.label, visited=node.visited) for node in nodes],
        [
            SvgArrow(
                source=a.source,
                target=a.target,
                label=", ".join(a.topics),
                taken=a.taken,
                dashed=a.line is not _Line.SOLID,
            )
            for a in arrows
        ],
        "the workflow's hats and topics",
    )
