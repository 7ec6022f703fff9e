"""``ralph graph``: the phase graph of the built-in pipeline, or a topology of the user's own,
with the path a run took through it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pipeline.app.cli._app import GraphFormat, _fail, _reading_log, _warn, app
from pipeline.app.graph import (
    Edge,
    phase_changes,
    phase_edges,
    run_topology,
    to_dot,
    to_mermaid,
    to_svg,
    topology_dot,
    topology_mermaid,
    topology_svg,
)
from pipeline.core.config import ConfigError, parse_config
from pipeline.events import LoopPolicy
from pipeline.handlers.runtime import WorkspaceLayout

__all__ = ["graph"]


@app.command()
def graph(
    source: Annotated[
        str | None,
        typer.Argument(
            help="A store (path or URL) or .jsonl log whose run to highlight "
            "(with --run: the store)."
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="Highlight the edges this run took (default store: .ralph/)."),
    ] = None,
    output: Annotated[
        GraphFormat,
        typer.Option("--format", help="mermaid, dot or svg (an arc diagram for a browser)."),
    ] = GraphFormat.MERMAID,
    topology: Annotated[
        bool,
        typer.Option(
            "--topology",
            help="Draw the topology of the workspace's ralph.toml (its hats, and the topics "
            "between them) instead of the phase graph.",
        ),
    ] = False,
    workspace: Annotated[
        Path, typer.Option("--workspace", "-C", help="The workspace whose ralph.toml to draw.")
    ] = Path(),
) -> None:
    """Draw the phase graph the reducers declare (the tests hold it equal to an exploration of
    the orchestration), with the phase changes a run made in red; a run that followed a
    topology of its own is drawn as that topology (hats and topics), with the hats it woke
    marked, and ``--topology`` draws the workspace's."""
    if topology:
        _draw_topology(_configured(workspace), (), output)
        return
    if source is None and run is None:
        _draw_phases([], output)
        return
    with _reading_log(source, run) as log:
        events = list(log.events())
    followed = run_topology(events)
    if followed is not None:
        _draw_topology(*followed, output)
        return
    _draw_phases(list(phase_changes(events)), output)


def _configured(root: Path) -> LoopPolicy:
    """The loop policy of ``root``'s ralph.toml, which must have a topology."""
    path = WorkspaceLayout(root=root).config
    try:
        config = parse_config(path.read_text("utf-8"), str(path))
    except FileNotFoundError as error:
        raise _fail(f"{path} not found; run `ralph init` in the workspace") from error
    except (OSError, UnicodeDecodeError) as error:
        raise _fail(f"cannot read {path}: {error}") from error
    except ConfigError as error:
        raise _fail(str(error)) from error
    if not config.hats.topology:
        raise _fail(
            f"{path} has no topology of its own (no [hats.NAME] with triggers): "
            "`ralph graph` without --topology draws the built-in pipeline"
        )
    return config.loop_policy()


def _draw_topology(policy: LoopPolicy, path: tuple[str, ...], output: GraphFormat) -> None:
    draws = {
        GraphFormat.MERMAID: topology_mermaid,
        GraphFormat.DOT: topology_dot,
        GraphFormat.SVG: topology_svg,
    }
    sys.stdout.write(draws[output](policy, path))


def _draw_phases(taken: list[Edge], output: GraphFormat) -> None:
    edges = phase_edges()
    draws = {GraphFormat.MERMAID: to_mermaid, GraphFormat.DOT: to_dot, GraphFormat.SVG: to_svg}
    sys.stdout.write(draws[output](edges, taken))
    unknown = sorted({e for e in taken if e not in edges})
    for edge in unknown:
        _warn(
            f"the run changed phase {edge.source.value} -> {edge.target.value} on {edge.fact}, "
            "which the declared graph does not hold (drawn dashed)"
        )
