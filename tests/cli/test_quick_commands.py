"""Each ``ralph`` command imports what it uses: ``--version`` loads neither typer nor the
engine, and a command loads its own module and none of the other commands' (no timing here:
the figures are in ``python -m benchmarks``; these tests hold the intent)."""

from __future__ import annotations

import importlib.metadata
import shutil
import sqlite3
import subprocess
import sys
import typing
from pathlib import Path

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app import cli
from pipeline.app.cli._events_quick import EVENTS_READ
from pipeline.app.cli._lean_store import SCHEMA_READ
from pipeline.app.cli._plain import PLAIN_SHAPES, PlainShape, arguments, run_plain
from pipeline.app.cli._runs_quick import cost_cell
from pipeline.core.state import SpendLine
from pipeline.events import SCHEMA_VERSION
from pipeline.handlers.store._link import link
from pipeline.handlers.store._migrations import MIGRATIONS
from pipeline.reducers.views import cost_text
from tests.cli.test_cli import ralph, run_like_ralph

_PROBE = (
    "import sys, runpy\n"
    "sys.argv = ['ralph', *sys.argv[1:]]\n"
    "try:\n"
    "    runpy.run_module('pipeline.app.cli', run_name='__main__', alter_sys=True)\n"
    "except SystemExit as stop:\n"
    "    status = stop.code\n"
    "else:\n"
    "    status = 0\n"
    "print('LOADED', ' '.join(sorted(sys.modules)))\n"
    "sys.exit(status)\n"
)
"""``ralph ARGV`` run as ``python -m pipeline.app.cli`` runs it (``alter_sys``: the same
``argv[0]``), then a line naming the modules it loaded, then its own exit status."""


def _probed(cwd: Path, *argv: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``ralph ARGV`` run once, as :func:`ralph` runs it (same environment), and the modules
    it had loaded: its exit status and streams (the probe's line taken off stdout) are what
    a plain ``ralph ARGV`` gives, so one run both says whether the lean path answered and
    what it printed."""
    result = run_like_ralph(cwd, sys.executable, "-c", _PROBE, *argv)
    said, marker, modules = result.stdout.rpartition("LOADED ")
    assert marker, result.stderr  # ralph raised before the probe's line: a crash
    result.stdout = said
    return result, set(modules.split())


def _loaded(cwd: Path, *argv: str) -> tuple[str, set[str]]:
    """What ``ralph ARGV`` printed, and the modules it had loaded."""
    result, modules = _probed(cwd, *argv)
    return result.stdout, modules


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
    if command == "events":  # status and the full runs fold runs with the engine's load_state
        assert "pipeline.engine" not in modules


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


def test_runs_answers_from_the_summaries_what_the_full_command_answers(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """On the demo's store ``ralph runs`` is answered from the ``run_summaries`` projection
    without loading typer or the events, and prints what the full command prints from the
    folded logs (which it falls back to for a store whose summaries are gone). Nor does it
    load attrs or subprocess: it finds the store without them."""
    said, modules = _loaded(demo_dir, "runs")
    assert not {"typer", "pipeline.events", "cattrs", "attrs", "subprocess"} & modules
    assert "$" in said  # the demo's agents report their cost
    kept, emptied = tmp_path / "a.db", tmp_path / "b.db"  # names of one length: one title
    for copy in (kept, emptied):
        shutil.copy(demo_dir / ".git" / "ralph" / "pipeline.db", copy)
    with sqlite3.connect(emptied) as db:
        db.execute("DELETE FROM run_summaries")
    lean = ralph("runs", str(kept), cwd=tmp_path)
    full = ralph("runs", str(emptied), cwd=tmp_path)
    assert lean.returncode == full.returncode == 0, (lean.stderr, full.stderr)
    assert lean.stdout.replace("a.db", "?.db") == full.stdout.replace("b.db", "?.db")
    store = emptied
    _said, modules = _loaded(tmp_path, "runs", str(store))
    assert "typer" in modules  # no current summary: the full command answered


def test_runs_reads_a_store_written_before_the_summaries(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A store from a release before the projection (no ``run_summaries`` table, schema 6)
    is still listed, by the full command, with the same cost."""
    store = tmp_path / "old.db"
    shutil.copy(demo_dir / ".git" / "ralph" / "pipeline.db", store)
    with sqlite3.connect(store) as db:
        db.execute("DROP TABLE run_summaries")
        db.execute("DELETE FROM schema_migrations WHERE version = 7")
    old = ralph("runs", str(store), cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    lean = ralph("runs", cwd=demo_dir)
    cost = lean.stdout.splitlines()[4].split("│")[3].strip()
    assert cost.startswith("$")
    assert cost in old.stdout


def test_the_lean_runs_path_reads_the_schema_the_store_writes() -> None:
    """The newest schema ``ralph runs`` reads lean is the SQLite store's newest migration: a
    migration added later makes the lean path step aside until it is checked."""
    assert max(version for version, _, _ in MIGRATIONS) == SCHEMA_READ


def test_events_answers_from_the_rows_what_the_full_command_answers(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """On the demo's store ``ralph events`` (also given the store's path, or the run) prints
    each stored row without loading typer, the events, the converter or attrs, exactly what the
    full command prints from the decoded events (run with ``--format table``, the default
    spelled out, which only the full command reads)."""
    store = tmp_path / "copy.db"
    shutil.copy(demo_dir / ".git" / "ralph" / "pipeline.db", store)
    (run_id,) = (row[0] for row in sqlite3.connect(store).execute("SELECT run_id FROM runs"))
    for argv in (("events",), ("events", str(store)), ("events", "--run", run_id)):
        said, modules = _loaded(demo_dir, *argv)
        assert not {"typer", "pipeline.events", "cattrs", "attrs", "subprocess"} & modules, argv
        full_said, full_modules = _loaded(demo_dir, *argv, "--format", "table")
        assert "pipeline.events" in full_modules
        assert said == full_said, argv
        assert len(said.splitlines()) > 50


def _rechained(store: Path) -> None:
    """Give every row of ``store`` the digest the store's chain makes of it, and each run its
    tip, as a writer of that row would have."""
    with sqlite3.connect(store) as db:
        rows = db.execute(
            "SELECT run_id, sequence, type, schema_version, body FROM events "
            "ORDER BY run_id, sequence"
        ).fetchall()
        tips: dict[str, str | None] = {}
        for run_id, sequence, tag, version, body in rows:
            tips[run_id] = link(tips.get(run_id), run_id, sequence, tag, version, body)
            db.execute(
                "UPDATE events SET digest = ? WHERE run_id = ? AND sequence = ?",
                (tips[run_id], run_id, sequence),
            )
        db.executemany(
            "UPDATE runs SET tip = ? WHERE run_id = ?", [(t, r) for r, t in tips.items()]
        )


@pytest.mark.parametrize(
    ("damage", "rechain"),
    [
        # A row changed after it was written: the chain shows it.
        (
            "UPDATE events SET body = replace(body, 'scripted', 'scriptex') WHERE sequence = 5",
            False,
        ),
        ("DELETE FROM events WHERE sequence = 7", True),  # a row lost, the chain made anew
        ("UPDATE events SET schema_version = 19 WHERE sequence = 3", True),  # to upcast
        ("UPDATE events SET body = '{' WHERE sequence = 4", True),  # chained, but no event
        ("UPDATE events SET digest = NULL", False),  # rows written before the chain
        ("UPDATE runs SET head = head + 1", False),  # rows lost at the end
        ("DELETE FROM runs", False),  # no runs
    ],
)
def test_events_leaves_what_it_cannot_read_as_the_store_does_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
    damage: str,
    rechain: bool,
) -> None:
    """A damaged log, a row of an older schema, rows from before the chain or a store with no
    run are read by the full command (typer loads), which says (and exits with) what it
    always says: the lean path prints nothing of its own there."""
    store = tmp_path / "copy.db"
    shutil.copy(demo_dir / ".git" / "ralph" / "pipeline.db", store)
    with sqlite3.connect(store) as db:
        db.execute(damage)
    if rechain:
        _rechained(store)
    lean, modules = _probed(tmp_path, "events", str(store))
    assert "typer" in modules
    full = ralph("events", str(store), "--format", "table", cwd=tmp_path)
    assert (lean.returncode, lean.stdout, lean.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )


def test_events_leaves_an_unknown_run_and_a_jsonl_log_to_the_full_command(
    demo_dir: Path,
) -> None:
    """``--run`` naming no run of the store, and a ``.jsonl`` log (which nothing vouches
    for, unlike the store's chained rows), are answered by the full command."""
    for argv in (("events", "--run", "nope"), ("events", ".ralph/event-log.jsonl")):
        _said, modules = _loaded(demo_dir, *argv)
        assert "typer" in modules, argv
    unknown = ralph("events", "--run", "nope", cwd=demo_dir)
    assert unknown.returncode == 2
    assert "nope" in unknown.stderr


def test_the_lean_events_path_reads_the_current_schema() -> None:
    """The lean path prints rows of the vocabulary's schema version only (older ones are
    upcast by the full command)."""
    assert EVENTS_READ == SCHEMA_VERSION


@given(
    invocations=st.integers(0, 10**6),
    cost_usd=st.floats(0, 10**7, allow_nan=False),
    unknown=st.integers(0, 10**6),
)
def test_the_lean_cost_cell_is_the_views_cost_text(
    invocations: int, cost_usd: float, unknown: int
) -> None:
    """The lean path's cost column says what ``ralph runs`` says from the folded state."""
    line = SpendLine(invocations=invocations, cost_usd=cost_usd, unknown_cost=unknown)
    expected = cost_text(line) if invocations else "-"
    assert cost_cell(invocations, cost_usd, unknown) == expected


_PLAIN_CALLS = [
    ("status",),
    ("status", "--json"),
    ("events",),
    ("respond", "yes", "--question", "q0"),
]


@pytest.mark.parametrize("argv", _PLAIN_CALLS, ids=" ".join)
def test_a_plain_shape_prints_what_the_full_command_prints(
    demo_dir: Path,
    argv: tuple[str, ...],
) -> None:
    """``status``, ``events`` and ``respond`` in their plain shapes skip typer's parsing
    (the typer path's signal routing never loads) and print, and exit with, exactly what the
    full command does (run here with ``-C .``, the default spelled out, which is not a plain
    shape)."""
    lean, lean_modules = _probed(demo_dir, *argv)
    full, full_modules = _probed(demo_dir, *argv, "-C", ".")
    typer_path = "pipeline.app.cli._shutdown"  # imported by main just before typer's app
    assert typer_path not in lean_modules
    assert typer_path in full_modules  # the full command answered
    assert (lean.returncode, lean.stdout, lean.stderr) == (
        full.returncode,
        full.stdout,
        full.stderr,
    )
    assert lean.stdout or lean.stderr


def test_a_read_command_loads_no_agent_plugin(demo_dir: Path) -> None:
    """The full ``ralph status`` (and the other run readers) reads no ``ralph.toml`` and so
    loads no agent plugin: the plugins' entry points are listed only where a config is read."""
    _said, modules = _loaded(demo_dir, "status", "-C", ".")
    assert "pipeline.handlers.agents._plugins" not in modules
    _said, modules = _loaded(demo_dir, "doctor")
    assert "pipeline.handlers.agents._plugins" in modules


@pytest.mark.parametrize("command", sorted(PLAIN_SHAPES))
def test_a_plain_shape_names_the_typer_commands_own_parameters(command: str) -> None:
    """Each plain shape's flags, options and arguments are the typer command's own (same
    spelling, same parameter, a flag a flag, an option a string), so the plain reading
    gives the function what typer would."""
    import typer.main

    shape = PLAIN_SHAPES[command]
    group = typer.main.get_command(cli._full_app(command))
    assert isinstance(group, typer.main.TyperGroup)
    typed = group.commands[command]
    assert typed.callback is not None
    params = {p.name: p for p in typed.params}
    hints = typing.get_type_hints(typed.callback)
    for spelled, name in {**shape.flags, **shape.options}.items():
        param = params[name]
        assert spelled in param.opts, (spelled, param.opts)
        assert getattr(param, "is_flag", False) is (spelled in shape.flags)
        assert hints[name] in ((bool,) if spelled in shape.flags else (str, str | None))
    for name in shape.positional:
        assert params[name].param_type_name == "argument"
        assert hints[name] in (str, str | None)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--run=x"],
        ["--run"],
        ["--run", "-x"],
        ["--run", "a", "--run", "b"],
        ["--json", "--json"],
        ["--", "x"],
        ["-C", "."],
        ["a", "b"],
    ],
)
def test_anything_but_the_plain_shape_is_left_to_typer(argv: list[str]) -> None:
    """An option the plain shape does not name, a value form it does not read, a repeat or
    one argument too many reads as no plain shape (typer parses it, as always)."""
    shape = PlainShape(
        module="m",
        function="f",
        positional=("source",),
        flags={"--json": "as_json"},
        options={"--run": "run"},
    )
    assert arguments(shape, argv) is None


def test_the_plain_shape_reads_its_words_in_any_order() -> None:
    """Options, flags and arguments of a plain shape are read wherever they stand, as typer
    reads them, each into the function's parameter."""
    shape = PLAIN_SHAPES["events"]
    assert arguments(shape, ["--run", "r1", "x.db"]) == {"run": "r1", "source": "x.db"}
    status = PLAIN_SHAPES["status"]
    assert arguments(status, ["--json", "--run", "r1"]) == {"as_json": True, "run": "r1"}
    assert arguments(status, []) == {}


def test_a_store_in_the_environment_is_left_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    """``RALPH_STORE`` names the read commands' store, which typer reads: no plain shape."""
    monkeypatch.setenv("RALPH_STORE", "elsewhere.db")
    assert run_plain("status", []) is None
