"""The ``ralph`` command line (typer + rich). Library code never exits or prints; this does.

The commands live in one module per group (``_run_commands``, ``_read_commands``, ...), all
on the typer app of ``_app``. This module stays small on purpose: ``ralph emit``, which an
agent runs once per topic, is dispatched before typer, rich or the engine are imported.
"""

from __future__ import annotations

import os
import sys

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False


if TYPE_CHECKING:
    import typer

__all__ = ["app", "main"]

_COMMAND_MODULES = (
    "pipeline.app.cli._init_commands",
    "pipeline.app.cli._run_commands",
    "pipeline.app.cli._preset_commands",
    "pipeline.app.cli._agent_commands",
    "pipeline.app.cli._context_commands",
    "pipeline.app.cli._worktree_commands",
    "pipeline.app.cli._merge_command",
    "pipeline.app.cli._read_commands",
    "pipeline.app.cli._travel_command",
    "pipeline.app.cli._serve_command",
    "pipeline.app.cli._graph_command",
    "pipeline.app.cli._doctor_command",
    "pipeline.app.cli._store_commands",
    "pipeline.app.cli._queue_commands",
)
"""The modules whose commands make up ``ralph``, in the order its help lists them."""


def _full_app() -> typer.Typer:
    """The typer app with every command registered."""
    import importlib

    from pipeline.app.cli._app import app as typer_app

    for module in _COMMAND_MODULES:
        importlib.import_module(module)
    return typer_app


def __getattr__(name: str) -> object:
    # ``pipeline.app.cli.app`` is built on first use, so that importing the package costs nothing.
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of the ``ralph`` console script."""
    if sys.argv[1:2] == ["emit"]:
        from pipeline.app.cli._emit import main as emit_main

        raise SystemExit(emit_main(sys.argv[2:]))
    group = sys.argv[1] if len(sys.argv) > 2 else None
    if group in ("memory", "task") and os.environ.get("RALPH_EVENTS_FILE"):
        # An agent's note: into its run's events file, as lean as ``ralph emit``.
        from pipeline.app.cli._note import AGENT_VERBS
        from pipeline.app.cli._note import main as note_main

        if sys.argv[2] in AGENT_VERBS[group]:
            raise SystemExit(note_main(group, sys.argv[2:]))
    from pipeline.app.cli._shutdown import routed_signals

    typer_app = _full_app()
    with routed_signals():
        typer_app()
