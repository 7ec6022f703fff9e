"""Drawing the phase graph as Mermaid or Graphviz DOT text (pure: edges in, text out).

Edges between the same two phases are drawn as one arrow labelled with every fact that makes
the change. Edges a run took are drawn thick and red; an edge a run took that the graph does
not hold (a run of an older release, say) is drawn too, dashed, so that nothing is hidden.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from pipeline.app.graph._svg import SvgArrow, SvgNode, arc_svg
from pipeline.core.state import Phase
from pipeline.reducers import Edge

__all__ = ["arrows", "to_dot", "to_mermaid", "to_svg"]

_START = "[*]"


def _label(fact: str) -> str:
    """A wire tag without its category: ``planning.plan_produced`` -> ``plan_produced``."""
    return fact.split(".", 1)[1]


def arrows(
    edges: Iterable[Edge], taken: Iterable[Edge] = ()
) -> list[tuple[Phase, Phase, list[str], bool, bool]]:
    """One arrow per pair of phases, in a stable order: (source, target, the facts' labels,
    whether a run took it, whether the graph holds it)."""
    known, taken = list(edges), list(taken)
    known_pairs = {(e.source, e.target) for e in known}
    taken_pairs = {(e.source, e.target) for e in taken}
    facts: dict[tuple[Phase, Phase], set[str]] = defaultdict(set)
    for edge in [*known, *taken]:
        facts[(edge.source, edge.target)].add(_label(edge.fact))
    order = list(Phase)
    return [
        (
            source,
            target,
            sorted(labels),
            (source, target) in taken_pairs,
            (source, target) in known_pairs,
        )
        for (source, target), labels in sorted(
            facts.items(), key=lambda item: (order.index(item[0][0]), order.index(item[0][1]))
        )
    ]


def to_mermaid(edges: Iterable[Edge], taken: Iterable[Edge] = ()) -> str:
    """A Mermaid ``stateDiagram-v2``; a run's edges in red."""
    lines = ["stateDiagram-v2"]
    styles = []
    drawn = arrows(edges, taken)
    for index, (source, target, labels, was_taken, known) in enumerate(drawn):
        start = _START if source is Phase.NOT_STARTED else source.name
        lines.append(f"    {start} --> {target.name}: {'<br>'.join(labels)}")
        if was_taken:
            dash = ",stroke-dasharray:4" if not known else ""
            styles.append(f"    linkStyle {index} stroke:#d00,stroke-width:3px{dash}")
    lines.append(f"    {Phase.COMPLETE.name} --> {_START}")
    return "\n".join([*lines, *styles]) + "\n"


def to_dot(edges: Iterable[Edge], taken: Iterable[Edge] = ()) -> str:
    """A Graphviz digraph; a run's edges in red."""
    lines = ["digraph phases {", "    rankdir=LR;", "    node [shape=box, style=rounded];"]
    for source, target, labels, was_taken, known in arrows(edges, taken):
        attributes = ['label="' + "\\n".join(labels) + '"']
        if was_taken:
            attributes += ["color=red", "penwidth=2.5"]
            if not known:
                attributes.append("style=dashed")
        lines.append(f"    {source.name} -> {target.name} [{', '.join(attributes)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(edges: Iterable[Edge], taken: Iterable[Edge] = ()) -> str:
    """An SVG arc diagram of the phases (their own order); a run's phases and edges red."""
    taken = list(taken)
    visited = {edge.target for edge in taken} | {edge.source for edge in taken}
    drawn = arrows(edges, taken)
    phases = {p for source, target, *_ in drawn for p in (source, target)}
    nodes = [
        SvgNode(id=phase.value, label=phase.value, visited=phase in visited)
        for phase in Phase
        if phase in phases
    ]
    lines = [
        SvgArrow(
            source=source.value,
            target=target.value,
            label=", ".join(labels),
            taken=was_taken,
            dashed=not known,
        )
        for source, target, labels, was_taken, known in drawn
    ]
    return arc_svg(nodes, lines, "the phase graph")
