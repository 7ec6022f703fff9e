"""Drawing a topology: the exact text of a small one, a run's path in red, every label escaped,
and (hypothesis) any topology drawn deterministically as well-formed Mermaid, DOT and SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.graph import topology_dot, topology_mermaid, topology_svg
from pipeline.events import Count, LoopPolicy, Topology, WorkHat
from tests.config.strategies import HAT_NAMES, topology_policies

WORKER = WorkHat(
    name="worker",
    triggers=("task.start", "work.rejected"),
    publishes=("work.done", "work.stuck"),
    default_publishes="work.done",
)
CHECKER = WorkHat(
    name="checker",
    triggers=("work.done",),
    publishes=("work.rejected", "LOOP_COMPLETE"),
    max_activations=Count(2),
)
SMALL = attrs.evolve(
    LoopPolicy.off(), completion_promise="LOOP_COMPLETE", topology=Topology(hats=(WORKER, CHECKER))
)


def test_a_small_topology_in_mermaid() -> None:
    """Start, hats, the completion and dropped nodes; publishes solid, default_publishes and
    exhausted topics dashed, each to the hat its topic wakes."""
    assert topology_mermaid(SMALL) == (
        "flowchart LR\n"
        '    start(("start"))\n'
        '    hat0["worker"]\n'
        '    hat1["checker"]\n'
        '    complete((("LOOP_COMPLETE")))\n'
        '    dropped>"reported and dropped"]\n'
        '    start -->|"task.start"| hat0\n'
        '    hat0 -->|"work.done"| hat1\n'
        '    hat0 -->|"work.stuck"| dropped\n'
        '    hat0 -.->|"work.done"| hat1\n'
        '    hat1 -->|"work.rejected"| hat0\n'
        '    hat1 -->|"LOOP_COMPLETE"| complete\n'
        '    hat1 -.->|"checker.exhausted"| dropped\n'
    )


def test_a_small_topology_in_dot() -> None:
    """The same drawing in Graphviz: default_publishes dashed, exhausted topics dotted."""
    assert topology_dot(SMALL) == (
        "digraph topology {\n"
        "    rankdir=LR;\n"
        "    node [shape=box, style=rounded];\n"
        '    start [label="start", shape=circle];\n'
        '    hat0 [label="worker"];\n'
        '    hat1 [label="checker"];\n'
        '    complete [label="LOOP_COMPLETE", shape=doublecircle];\n'
        '    dropped [label="reported and dropped", style=dashed];\n'
        '    start -> hat0 [label="task.start"];\n'
        '    hat0 -> hat1 [label="work.done"];\n'
        '    hat0 -> dropped [label="work.stuck"];\n'
        '    hat0 -> hat1 [label="work.done", style=dashed];\n'
        '    hat1 -> hat0 [label="work.rejected"];\n'
        '    hat1 -> complete [label="LOOP_COMPLETE"];\n'
        '    hat1 -> dropped [label="checker.exhausted", style=dotted];\n'
        "}\n"
    )


def test_the_coordinator_gets_what_nobody_triggers_on() -> None:
    """With a coordinator, a topic nobody triggers on goes to it (a hexagon), not to the
    dropped node; topics between the same hats in the same style share one arrow."""
    router = WorkHat(name="router", triggers=("route.me",), publishes=("task.start",))
    wide = attrs.evolve(WORKER, publishes=("work.done", "work.stuck", "work.odd"))
    topology = Topology(hats=(wide, CHECKER, router), coordinator="router")
    drawing = topology_mermaid(attrs.evolve(SMALL, topology=topology))
    assert '    hat2{{"router"}}\n' in drawing
    assert '    hat0 -->|"work.stuck<br>work.odd"| hat2\n' in drawing
    assert '    hat1 -.->|"checker.exhausted"| hat2\n' in drawing
    assert '    hat2 -->|"task.start"| hat0\n' in drawing
    assert "dropped" not in drawing


def test_a_runs_path_marks_its_hats_and_the_arrows_between_them() -> None:
    """Visited hats get the ``visited`` class (red in DOT), the arrows between consecutive
    hats and from the start are red; a step no arrow shows (worker after worker) is added,
    dashed and unlabelled; a name the topology lacks is ignored."""
    path = ("worker", "checker", "ghost", "worker", "worker")
    mermaid = topology_mermaid(SMALL, path).splitlines()
    assert mermaid[-4:] == [
        "    hat0 -.-> hat0",
        "    classDef visited stroke:#d00,stroke-width:3px",
        "    class start,hat0,hat1 visited",
        "    linkStyle 0,1,3,4,7 stroke:#d00,stroke-width:3px",
    ]
    dot = topology_dot(SMALL, path)
    assert '    hat1 [label="checker", color=red, penwidth=2];\n' in dot
    assert '    complete [label="LOOP_COMPLETE", shape=doublecircle];\n' in dot
    assert '    hat0 -> hat1 [label="work.done", style=dashed, color=red, penwidth=2.5];\n' in dot
    assert '    hat1 -> complete [label="LOOP_COMPLETE"];\n' in dot
    assert "    hat0 -> hat0 [style=dashed, color=red, penwidth=2.5];\n" in dot


_SVG = "{http://www.w3.org/2000/svg}"


def svg_parts(svg: str) -> tuple[dict[str, tuple[str, bool]], list[ET.Element]]:
    """The drawing's nodes (id: label, visited) and arrows, read back as XML (it must parse)."""
    root = ET.fromstring(svg)
    nodes = {
        g.attrib["data-node"]: (g.findtext(f"{_SVG}title", ""), g.attrib["data-visited"] == "true")
        for g in root.iter(f"{_SVG}g")
    }
    return nodes, [p for p in root.iter(f"{_SVG}path") if "data-taken" in p.attrib]


def test_a_runs_path_in_svg_is_the_same_as_in_mermaid() -> None:
    """The SVG drawing has the same nodes, arrows and red as the Mermaid one."""
    path = ("worker", "checker", "ghost", "worker", "worker")
    nodes, arrows = svg_parts(topology_svg(SMALL, path))
    assert nodes == {
        "start": ("start", True),
        "hat0": ("worker", True),
        "hat1": ("checker", True),
        "complete": ("LOOP_COMPLETE", False),
        "dropped": ("reported and dropped", False),
    }
    mermaid = topology_mermaid(SMALL, path)
    assert len(arrows) == len([ln for ln in mermaid.splitlines() if _MERMAID_EDGE.fullmatch(ln)])
    red = [a for a in arrows if a.attrib["data-taken"] == "true"]
    assert len(red) == len(mermaid.splitlines()[-1].split()[1].split(","))
    assert all(a.attrib["stroke"] == "#d00" for a in red)


def test_an_empty_path_marks_nothing() -> None:
    """No path: no class, no link style, no red."""
    assert "visited" not in topology_mermaid(SMALL, ())
    assert "linkStyle" not in topology_mermaid(SMALL, ("nobody",))
    assert "red" not in topology_dot(SMALL, ())


def test_every_label_is_escaped() -> None:
    """Names and topics the validators would refuse (a policy built with validation off)
    cannot break out of their labels: Mermaid gets #<code>; entities, DOT backslashes."""
    odd = 'x"]; click x call alert()|<b>#\\\n'
    with attrs.validators.disabled():
        hat = WorkHat(name=odd, triggers=("go",), publishes=(odd,))
        topology = Topology(hats=(hat,), starting_event="go")
    policy = attrs.evolve(LoopPolicy.off(), topology=topology, completion_promise=odd)
    mermaid = topology_mermaid(policy, (odd,))
    escaped = "x#34;#93;#59; click x call alert#40;#41;#124;#60;b#62;#35;#92;#10;"
    assert f'    hat0["{escaped}"]\n' in mermaid
    assert f'    hat0 -->|"{escaped}"| complete\n' in mermaid
    dot = topology_dot(policy, (odd,))
    assert '    hat0 [label="x\\"]; click x call alert()|<b>#\\\\\\n", color=red' in dot
    assert_well_formed(mermaid, dot)
    nodes, _arrows = svg_parts(topology_svg(policy, (odd,)))
    assert nodes["hat0"] == (odd, True)  # whole in its title, as text


_DOT_STRING = r'"(?:[^"\\\n]|\\.)*"'
_DOT_ATTRIBUTES = rf"(?: \[(?:[a-z]+=(?:{_DOT_STRING}|[A-Za-z0-9.]+)(?:, )?)+\])?"
_DOT_NODE = re.compile(rf"    (\w+){_DOT_ATTRIBUTES};")
_DOT_EDGE = re.compile(rf"    (\w+) -> (\w+){_DOT_ATTRIBUTES};")
_MERMAID_LABEL = r'"[^"\n]*"'
_MERMAID_NODE = re.compile(
    rf"    (\w+)(?:\(\(\(|\(\(|\[|\{{\{{|>){_MERMAID_LABEL}(?:\)\)\)|\)\)|\]|\}}\}})"
)
_MERMAID_EDGE = re.compile(rf"    (\w+) (?:-->|-\.->)(?:\|{_MERMAID_LABEL}\| | )(\w+)")


def assert_well_formed(mermaid: str, dot: str) -> None:
    """Every line of both drawings is a declaration, an arrow between declared nodes or a
    style; DOT's braces balance and every quoted string is closed."""
    lines = dot.splitlines()
    assert lines[:3] == [
        "digraph topology {",
        "    rankdir=LR;",
        "    node [shape=box, style=rounded];",
    ]
    assert lines[-1] == "}"
    assert dot.count("{") == dot.count("}") == 1
    declared: set[str] = set()
    for line in lines[3:-1]:
        node, edge = _DOT_NODE.fullmatch(line), _DOT_EDGE.fullmatch(line)
        assert node or edge, line
        if node:
            declared.add(node.group(1))
        elif edge:
            assert {edge.group(1), edge.group(2)} <= declared, line
    lines = mermaid.splitlines()
    assert lines[0] == "flowchart LR"
    declared = set()
    for line in lines[1:]:
        node, edge = _MERMAID_NODE.fullmatch(line), _MERMAID_EDGE.fullmatch(line)
        if node:
            declared.add(node.group(1))
        elif edge:
            assert {edge.group(1), edge.group(2)} <= declared, line
        else:
            assert re.fullmatch(
                r"    (classDef visited .*|class [\w,]+ visited|linkStyle [\d,]+ .*)", line
            ), line


paths = st.lists(st.sampled_from([*HAT_NAMES, "ghost"]), max_size=6)


@given(policy=topology_policies(), path=paths)
def test_any_topology_is_drawn_deterministically_and_well_formed(
    policy: LoopPolicy, path: list[str]
) -> None:
    """Both drawings are total and deterministic, well formed, and have a node per hat."""
    mermaid, dot = topology_mermaid(policy, path), topology_dot(policy, path)
    assert (mermaid, dot) == (topology_mermaid(policy, path), topology_dot(policy, path))
    assert_well_formed(mermaid, dot)
    assert policy.topology is not None
    for index, hat in enumerate(policy.topology.hats):
        assert f'    hat{index} [label="{hat.name}"' in dot
    assert ("visited" in mermaid) == any(h.name in path for h in policy.topology.hats)
    svg = topology_svg(policy, path)
    assert svg == topology_svg(policy, path)
    nodes, _arrows = svg_parts(svg)
    assert [nodes[f"hat{i}"][0] for i in range(len(policy.topology.hats))] == [
        hat.name for hat in policy.topology.hats
    ]


def test_without_a_topology_nothing_is_drawn() -> None:
    """The built-in pipeline has no topology: an empty drawing."""
    assert topology_mermaid(LoopPolicy.off()) == "flowchart LR\n"
    assert topology_dot(LoopPolicy.off()) == (
        "digraph topology {\n    rankdir=LR;\n    node [shape=box, style=rounded];\n}\n"
    )
