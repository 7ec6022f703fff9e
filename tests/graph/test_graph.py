"""The phase graph: the declared table equal to what exploring orchestration finds, every
edge witnessed, its drawing current, and no phase change outside it (hypothesis over simulated
runs and reachable states)."""

from __future__ import annotations

import importlib.util
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.graph import phase_changes, phase_edges, to_dot, to_mermaid
from pipeline.app.testing import simulated_runs
from pipeline.core.effects import measures_runtime
from pipeline.core.state import Phase
from pipeline.events import (
    WIRE_TAGS,
    BudgetExceeded,
    BudgetKind,
    Instant,
    PipelineEvent,
    RunInterrupted,
    RunResumed,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from pipeline.orchestration import next_effect
from pipeline.reducers import Edge, fold
from tests.cli.test_cli import ralph
from tests.graph.exploration import explore
from tests.support import WHOLE_RUNS

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> object:
    spec = importlib.util.spec_from_file_location(
        "generate_graph", ROOT / "scripts" / "generate_graph.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _lines(edges: frozenset[Edge]) -> list[str]:
    """``edges`` as the table spells them: each phase pair with the facts' classes."""
    classes = {tag: kind.__name__ for kind, tag in WIRE_TAGS.items()}
    pairs: dict[tuple[Phase, Phase], list[str]] = {}
    for edge in sorted(edges):
        pairs.setdefault((edge.source, edge.target), []).append(classes[edge.fact])
    return [f"    (_P.{a.name}, _P.{b.name}): {', '.join(f)}" for (a, b), f in pairs.items()]


@pytest.mark.slow
def test_the_declared_edges_are_what_exploring_finds() -> None:
    """pipeline/reducers/_edges.py holds exactly the phase changes a fresh exploration of the
    orchestration finds (it prints the lines to add or remove), every phase is reached, and
    each edge's witness log, folded from the start, ends with exactly that change."""
    explored = explore()
    missing = explored.edges - phase_edges()
    extra = phase_edges() - explored.edges
    assert explored.edges == phase_edges(), "\n".join(
        [
            "the declared phase graph (pipeline/reducers/_edges.py) differs from the exploration;",
            "add:",
            *_lines(missing),
            "remove:",
            *_lines(extra),
        ]
    )
    assert explored.phases == frozenset(Phase)
    assert explored.witnesses.keys() == explored.edges
    for edge, witness in explored.witnesses.items():
        assert list(phase_changes(witness))[-1] == edge


def test_the_phase_graph_page_draws_the_declared_edges() -> None:
    """docs/architecture/phase-graph.md is the declared table drawn (regenerate with
    scripts/generate_graph.py), and every phase is in it."""
    assert {Phase.NOT_STARTED, *(edge.target for edge in phase_edges())} == set(Phase)
    document = _generator().document(to_mermaid(phase_edges()))  # type: ignore[attr-defined]
    assert (ROOT / "docs" / "architecture" / "phase-graph.md").read_text() == document
    for phase in Phase:
        if phase is not Phase.NOT_STARTED:
            assert phase.name in document


@pytest.mark.slow
@WHOLE_RUNS
@given(run=simulated_runs())
def test_no_simulated_run_changes_phase_along_an_edge_the_graph_lacks(
    run: tuple[object, tuple[PipelineEvent, ...], object],
) -> None:
    """Runs of any budgets, chains and loop policies hypothesis draws stay on the graph."""
    _config, log, _final = run
    edges = phase_edges()
    for change in phase_changes(log):
        assert change in edges, f"{change} is not in the phase graph"


T = Instant(datetime(2026, 1, 1, tzinfo=UTC))
HANDLER_FACTS: tuple[PipelineEvent, ...] = (
    WorkspaceIoError(kind=WorkspaceErrorKind.READ, path="f", message="gone", at=T),
    BudgetExceeded(budget=BudgetKind.RUNTIME, detail="spent", at=T),
    RunInterrupted(reason="SIGTERM", at=T),
)


@pytest.mark.slow
@WHOLE_RUNS
@given(run=simulated_runs(), fact=st.sampled_from(HANDLER_FACTS), data=st.data())
def test_facts_only_real_handlers_report_keep_any_reachable_state_on_the_graph(
    run: tuple[object, tuple[PipelineEvent, ...], object],
    fact: PipelineEvent,
    data: st.DataObject,
) -> None:
    """An I/O error or an interruption in any state a simulated run passes through (then a
    resumption), the runtime budget spent where a phase or iteration begins: every phase
    change is in the graph."""
    _config, log, _final = run
    cut = data.draw(st.integers(1, len(log)), label="facts before")
    if isinstance(fact, BudgetExceeded) and not measures_runtime(next_effect(fold(log[:cut]))):
        return  # the runtime measures its budget only as a phase or an iteration begins
    path = [*log[:cut], fact]
    if fold(path).phase is Phase.INTERRUPTED:
        path.append(RunResumed(checkpoint_sequence=None, at=T))
    edges = phase_edges()
    for change in phase_changes(path):
        assert change in edges, f"{change} is not in the phase graph"


@pytest.mark.slow
def test_ralph_graph_draws_every_phase_and_a_runs_edges_in_red(tmp_path: Path) -> None:
    """``ralph graph`` prints the declared graph (Mermaid or DOT); with ``--run`` the arrows
    the demo run took, and only those, are red."""
    made = ralph("demo", "d", "--quiet", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    root = tmp_path / "d"
    plain = ralph("graph", cwd=root)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == to_mermaid(phase_edges())
    assert "linkStyle" not in plain.stdout
    dot = ralph("graph", "--format", "dot", cwd=root)
    assert dot.stdout == to_dot(phase_edges())
    assert dot.stdout.startswith("digraph phases {")
    highlighted = ralph("graph", "--run", _latest_run(root), cwd=root)
    assert highlighted.returncode == 0, highlighted.stderr
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (summary,) = store.runs()
        taken = list(phase_changes(store.read(summary.run_id)))
    assert taken
    assert highlighted.stdout == to_mermaid(phase_edges(), taken)
    red = [line for line in highlighted.stdout.splitlines() if "stroke:#d00" in line]
    assert len(red) == len({(e.source, e.target) for e in taken})
    assert highlighted.stderr == ""
    svg = ralph("graph", "--run", _latest_run(root), "--format", "svg", cwd=root)
    assert svg.returncode == 0, svg.stderr
    assert svg.stdout.startswith("<svg ")
    assert svg.stdout.count("data-taken='true'") == len(red)
    wrong = ralph("graph", "--format", "png", cwd=root)
    assert wrong.returncode == 2


def _latest_run(root: Path) -> str:
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        return store.runs()[-1].run_id
