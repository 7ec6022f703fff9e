"""Drawing a graph as an SVG arc diagram (pure: nodes and arrows in, markup out), for
``ralph serve``'s run page, which must draw the phase graph or a topology without a script
library or a layout program.

The nodes stand in one row in the order given (the phases' own order, or a topology's start,
hats and ends), so the drawing is the same for every run of one configuration and only the
red changes. An arrow to a node further right is an arc above the row, one to a node further
left an arc below it, one to its own node a loop; an arc's height grows with the distance it
spans, so arcs of different lengths do not lie on each other. A run's arrows and nodes are
red and drawn last. Labels are escaped: hat names and topics come from a configuration.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final, final

from attrs import frozen

__all__ = ["SvgArrow", "SvgNode", "arc_svg"]

_STEP: Final = 128
_BOX_W: Final = 116
_BOX_H: Final = 30
_LABEL_CHARS: Final = 17
_GREY: Final = "#8c959f"
_RED: Final = "#d00"


@final
@frozen(kw_only=True)
class SvgNode:
    """A node: its id (what arrows name), the label shown, whether a run went through it."""

    id: str
    label: str
    visited: bool


@final
@frozen(kw_only=True)
class SvgArrow:
    """An arrow between two nodes: its label (a tooltip), whether a run took it, and
    whether it is dashed (a default route, or a step the graph does not hold)."""

    source: str
    target: str
    label: str
    taken: bool
    dashed: bool = False


def _lift(distance: int) -> float:
    return 16.0 + 24.0 * distance


def arc_svg(nodes: Sequence[SvgNode], arrows: Sequence[SvgArrow], title: str) -> str:
    """The graph as one ``<svg>`` element (``title`` its accessible name); arrows naming a
    node not in ``nodes`` are left out."""
    place = {node.id: index for index, node in enumerate(nodes)}
    drawn = [a for a in arrows if a.source in place and a.target in place]
    spans = [place[a.target] - place[a.source] for a in drawn]
    above = max((_lift(d) for d in spans if d >= 0), default=0.0) + 14
    below = max((_lift(-d) for d in spans if d < 0), default=0.0) + 14
    top = above
    bottom = top + _BOX_H
    width = max(len(nodes), 1) * _STEP
    height = bottom + below

    def centre(node_id: str) -> float:
        return _STEP / 2 + place[node_id] * _STEP

    seen: dict[tuple[str, str], int] = {}
    paths = []
    # The run's arrows last, so that they lie on top.
    for arrow in sorted(drawn, key=lambda a: a.taken):
        pair = (arrow.source, arrow.target)
        repeat = seen[pair] = seen.get(pair, -1) + 1  # same pair, another style: offset
        start, end = centre(arrow.source), centre(arrow.target)
        distance = place[arrow.target] - place[arrow.source]
        shift = 5.0 * repeat
        if distance == 0:
            y = top
            d = f"M{start - 14:.0f},{y} C{start - 30:.0f},{y - 34 - shift:.0f} "
            d += f"{start + 30:.0f},{y - 34 - shift:.0f} {start + 14:.0f},{y}"
        elif distance > 0:
            lift = _lift(distance) * 4 / 3 + shift
            d = f"M{start + 12:.0f},{top} C{start + 12:.0f},{top - lift:.0f} "
            d += f"{end - 12:.0f},{top - lift:.0f} {end - 12:.0f},{top}"
        else:
            lift = _lift(-distance) * 4 / 3 + shift
            d = f"M{start - 12:.0f},{bottom} C{start - 12:.0f},{bottom + lift:.0f} "
            d += f"{end + 12:.0f},{bottom + lift:.0f} {end + 12:.0f},{bottom}"
        colour, thick = (_RED, 3) if arrow.taken else (_GREY, 1.2)
        dash = " stroke-dasharray='5 4'" if arrow.dashed else ""
        head = "taken" if arrow.taken else "plain"
        paths.append(
            f"<path d='{d}' fill='none' stroke='{colour}' stroke-width='{thick}'{dash} "
            f"marker-end='url(#head-{head})' data-taken='{str(arrow.taken).lower()}'>"
            f"<title>{escape(_arrow_title(arrow, nodes, place))}</title></path>"
        )
    boxes = []
    for node in nodes:
        x = centre(node.id) - _BOX_W / 2
        stroke, thick = (_RED, 3) if node.visited else ("#57606a", 1)
        shown = node.label if len(node.label) <= _LABEL_CHARS else node.label[:16] + "\u2026"
        boxes.append(
            f"<g data-node='{escape(node.id)}' data-visited='{str(node.visited).lower()}'>"
            f"<title>{escape(node.label)}</title>"
            f"<rect x='{x:.0f}' y='{top:.0f}' width='{_BOX_W}' height='{_BOX_H}' rx='6' "
            f"fill='#f6f8fa' stroke='{stroke}' stroke-width='{thick}'/>"
            f"<text x='{centre(node.id):.0f}' y='{top + 19:.0f}' text-anchor='middle' "
            f"font-size='12'>{escape(shown)}</text></g>"
        )
    heads = "".join(
        f"<marker id='head-{name}' viewBox='0 0 10 10' refX='9' refY='5' markerWidth='7' "
        f"markerHeight='7' orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' "
        f"fill='{colour}'/></marker>"
        for name, colour in (("plain", _GREY), ("taken", _RED))
    )
    return (
        f"<svg xmlns='http://www.w3.org/2000/svg' class='graph' role='img' "
        f"aria-label='{escape(title)}' width='{width}' height='{height:.0f}' "
        f"viewBox='0 0 {width} {height:.0f}' font-family='system-ui, sans-serif'>"
        f"<defs>{heads}</defs>{''.join(paths)}{''.join(boxes)}</svg>"
    )


def _arrow_title(arrow: SvgArrow, nodes: Sequence[SvgNode], place: dict[str, int]) -> str:
    """An arrow's tooltip: from, to, and its label."""
    source, target = nodes[place[arrow.source]].label, nodes[place[arrow.target]].label
    label = f": {arrow.label}" if arrow.label else ""
    return f"{source} \u2192 {target}{label}" + (" (this run)" if arrow.taken else "")
