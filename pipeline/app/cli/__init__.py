"""The ``ralph`` command line (typer + rich). Library code never exits or prints; this does.

The commands live in one module per group (``_run_commands``, ``_read_commands``, ...), all
on the typer app of ``_app``. This module stays small on purpose: ``ralph emit``, which an
agent runs once per topic, is dispatched before typer, rich or the engine are imported, and
so are ``ralph mcp`` (the agent's MCP server, which its CLI starts once per invocation),
``ralph --version``, and ``ralph runs``, ``status``, ``respond`` and ``events`` where
the store's projections or rows answer them (``_runs_quick``, ``_status_quick``,
``_respond_quick``, ``_events_quick``); the plain shapes of ``status``, ``events`` and
``respond`` skip typer's parsing (``_plain``). Any other command imports the module (or two)
that define it and none of the others (:data:`COMMANDS`); only the help, which lists them all,
imports every one.
"""

from __future__ import annotations

import os
import sys

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False


if TYPE_CHECKING:
    import typer

__all__ = ["COMMANDS", "app", "main"]

COMMANDS: dict[str, tuple[str, ...]] = {
    "init": ("pipeline.app.cli._init_commands",),
    **dict.fromkeys(("run", "resume", "abandon", "demo"), ("pipeline.app.cli._run_commands",)),
    "presets": ("pipeline.app.cli._preset_commands",),
    **dict.fromkeys(
        ("emit", "mcp", "respond", "guide", "interrupt", "fork"),
        ("pipeline.app.cli._agent_commands",),
    ),
    **dict.fromkeys(("memory", "task"), ("pipeline.app.cli._context_commands",)),
    "worktrees": ("pipeline.app.cli._worktree_commands", "pipeline.app.cli._merge_command"),
    **dict.fromkeys(
        ("replay", "events", "status", "topics", "report"), ("pipeline.app.cli._read_commands",)
    ),
    "diff": ("pipeline.app.cli._travel_command",),
    "serve": ("pipeline.app.cli._serve_command",),
    "graph": ("pipeline.app.cli._graph_command",),
    "doctor": ("pipeline.app.cli._doctor_command",),
    **dict.fromkeys(("salvage", "runs", "projections"), ("pipeline.app.cli._store_commands",)),
    **dict.fromkeys(("submit", "cancel", "worker"), ("pipeline.app.cli._queue_commands",)),
}
"""Each command (or group) of ``ralph`` and the modules that register it, in the order its
help lists them: a command run imports only its own (a test holds this table to what the
modules register)."""

_COMMAND_MODULES = tuple(dict.fromkeys(module for own in COMMANDS.values() for module in own))
"""The modules whose commands make up ``ralph``, in the order its help lists them."""

_VERSION_FLAGS = (["--version"], ["-V"])


def _full_app(command: str | None = None) -> typer.Typer:
    """The typer app with ``command`` registered (every command when None, or when
    ``command`` is not one: the help lists them all, and a mistyped name is told the
    names)."""
    import importlib

    from pipeline.app.cli._app import app as typer_app

    for module in COMMANDS.get(command or "", _COMMAND_MODULES):
        importlib.import_module(module)
    return typer_app


def _print_version() -> None:
    """``ralph --version``, without typer, rich or the package metadata (reading that
    imports ``email`` and ``zipfile``: more than the rest of the command). The version is
    ``pipeline.__version__``, which the build reads too, so the two cannot differ."""
    from pipeline import __version__

    sys.stdout.write(f"ralph {__version__}\n")


def __getattr__(name: str) -> object:
    # ``pipeline.app.cli.app`` is built on first use, so that importing the package costs nothing.
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point of the ``ralph`` console script."""
    if sys.argv[1:] in _VERSION_FLAGS:
        _print_version()
        return
    if sys.argv[1:2] == ["emit"]:
        from pipeline.app.cli._emit import main as emit_main

        raise SystemExit(emit_main(sys.argv[2:]))
    if sys.argv[1:2] == ["mcp"]:
        # An agent's CLI starts it for every invocation and waits for it: as lean as emit
        # (its main hands ``--control``, the person's side, to that server).
        from pipeline.app.cli._mcp_agent import main as mcp_main

        raise SystemExit(mcp_main(sys.argv[2:]))
    if sys.argv[1:2] in (["runs"], ["status"], ["respond"], ["events"]):
        # From the store's projections or rows where they answer exactly, without typer or
        # the events.
        import importlib

        quick = importlib.import_module(f"pipeline.app.cli._{sys.argv[1]}_quick")
        answered = quick.main(sys.argv[2:])
        if answered is not None:
            raise SystemExit(answered)
    if sys.argv[1:2] in (["status"], ["events"], ["respond"]):
        # Their plain shapes through the command's own function, without typer's parsing.
        from pipeline.app.cli._plain import run_plain

        done = run_plain(sys.argv[1], sys.argv[2:])
        if done is not None:
            raise SystemExit(done)
    group = sys.argv[1] if len(sys.argv) > 2 else None
    if group in ("memory", "task") and os.environ.get("RALPH_EVENTS_FILE"):
        # An agent's note: into its run's events file, as lean as ``ralph emit``.
        from pipeline.app.cli._note import AGENT_VERBS
        from pipeline.app.cli._note import main as note_main

        if sys.argv[2] in AGENT_VERBS[group]:
            raise SystemExit(note_main(group, sys.argv[2:]))
    from pipeline.app.cli._shutdown import routed_signals

    typer_app = _full_app(sys.argv[1] if len(sys.argv) > 1 else None)
    with routed_signals():
        typer_app()
