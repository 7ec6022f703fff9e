"""Each ``ralph`` command imports what it uses: ``--version`` loads neither typer nor the
engine, and a command loads its own module and none of the other commands' (no timing here:
the figures are in ``python -m benchmarks``; these tests hold the intent)."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from pipeline import cli

_PROBE = (
    "import sys, runpy\n"
    "sys.argv = ['ralph', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('pipeline.cli', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
    "print('LOADED', ' '.join(sorted(sys.modules)))\n"
)


def _loaded(cwd: Path, *argv: str) -> tuple[str, set[str]]:
    """What ``ralph ARGV`` printed before the probe's line, and the modules it had loaded."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    said, _, modules = result.stdout.rpartition("LOADED ")
    return said, set(modules.split())


def test_version_loads_neither_typer_nor_the_engine_nor_the_metadata(tmp_path: Path) -> None:
    """``ralph --version`` and ``-V`` print the version with none of the heavy packages
    loaded (typer, rich, the engine, the events, the package metadata's ``email``)."""
    for flag in ("--version", "-V"):
        said, modules = _loaded(tmp_path, flag)
        assert said.strip() == f"ralph {importlib.metadata.version('ralph-pipeline')}"
        heavy = {"typer", "rich", "pipeline.engine", "pipeline.events", "importlib.metadata"}
        assert not heavy & modules, heavy & modules


@pytest.mark.parametrize("command", ["status", "runs", "events"])
def test_a_command_loads_its_own_module_and_no_other_commands(tmp_path: Path, command: str) -> None:
    """``ralph status``, ``runs`` and ``events`` (here in a folder with no store: they say
    so) import the module that defines them and none of the other commands' modules."""
    _said, modules = _loaded(tmp_path, command)
    own = set(cli.COMMANDS[command])
    assert own <= modules
    others = set(cli._COMMAND_MODULES) - own  # the table under test
    assert not others & modules, others & modules


def test_the_command_table_names_what_each_module_registers() -> None:
    """``COMMANDS`` lists every command and group of the full app, each with the module(s)
    that register it, and nothing else: a command added to a module but not to the table
    (or listed under the wrong module) would not load when it is run."""
    app = cli.app
    assert isinstance(app, typer.Typer)
    registered: dict[str, set[str]] = {}
    for command in app.registered_commands:
        assert command.callback is not None
        name = command.name or command.callback.__name__.replace("_", "-")
        registered.setdefault(name, set()).add(command.callback.__module__)
    for group in app.registered_groups:
        assert group.name is not None
        assert group.typer_instance is not None
        modules = registered.setdefault(group.name, set())
        for command in group.typer_instance.registered_commands:
            assert command.callback is not None
            modules.add(command.callback.__module__)
    table = {name: set(modules) for name, modules in cli.COMMANDS.items()}
    # A group is registered (add_typer) where it is defined; its commands may live apart.
    assert registered.keys() == table.keys()
    for name, modules in registered.items():
        assert modules <= table[name], (name, modules, table[name])
