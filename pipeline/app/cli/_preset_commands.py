"""``ralph presets``: the workflow presets shipped with ralph, listed, and one shown with its
drawing and what the topology checks find."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer
from rich.table import Table

from pipeline.app.cli._app import _print, _said_failures, app, out
from pipeline.app.graph import topology_mermaid
from pipeline.app.workflows import DEFAULT_PRESET, Preset, load_preset, shipped_presets
from pipeline.core.config import Severity, topology_problems

presets_app = typer.Typer(
    help="Workflow presets: whole workflows (a loop and its hats) to run with "
    "ralph run --preset NAME or write with ralph init --preset NAME.",
    invoke_without_command=True,
)
app.add_typer(presets_app, name="presets")


class ShowFormat(StrEnum):
    """What ``ralph presets show`` prints."""

    ALL = "all"
    TOML = "toml"
    MERMAID = "mermaid"


def _hats(preset: Preset) -> str:
    if not preset.topology:
        return "planner, developer, reviewer (built in)"
    return ", ".join(preset.hats)


@presets_app.callback(invoke_without_command=True)
def presets(ctx: typer.Context) -> None:
    """List the workflow presets with what each is for."""
    if ctx.invoked_subcommand is not None:
        return
    table = Table(title="Workflow presets", title_justify="left")
    for column in ("preset", "what it is for", "hats"):
        table.add_column(column, overflow="fold")
    for preset in shipped_presets():
        name = preset.name + (" (default)" if preset.name == DEFAULT_PRESET else "")
        table.add_row(name, preset.description, _hats(preset))
    out.print(table)
    _print(
        "Show one: ralph presets show NAME. Use one: ralph run --preset NAME "
        "(NAME,NAME runs one after the other), or ralph init --preset NAME."
    )


def _checks(preset: Preset) -> list[str]:
    problems = topology_problems(preset.policy())
    if not problems:
        return ["Checks: no problems found."]
    lines = ["Checks:"]
    for problem in problems:
        severity = "error" if problem.severity is Severity.ERROR else "warning"
        lines.append(f"  {severity}: {problem.message}")
    return lines


@presets_app.command("show")
def show(
    name: Annotated[str, typer.Argument(help="The preset (ralph presets lists them).")],
    show_format: Annotated[
        ShowFormat,
        typer.Option("--format", help="all, toml (the preset's file) or mermaid (its drawing)."),
    ] = ShowFormat.ALL,
) -> None:
    """Print a preset: its TOML, its topology drawn as Mermaid, and what the checks find."""
    with _said_failures():
        preset = load_preset(name)
    drawing = (
        topology_mermaid(preset.policy())
        if preset.topology
        else "%% No hats of its own: the built-in pipeline (ralph graph draws its phases).\n"
    )
    if show_format is ShowFormat.TOML:
        out.print(preset.text, markup=False, end="", soft_wrap=True)
        return
    if show_format is ShowFormat.MERMAID:
        out.print(drawing, markup=False, end="", soft_wrap=True)
        return
    lines = [
        preset.text.rstrip("\n"),
        "",
        "The topology, as Mermaid:",
        "",
        drawing.rstrip("\n"),
        "",
        *_checks(preset),
    ]
    _print("\n".join(lines))
