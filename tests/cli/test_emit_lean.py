"""``ralph emit`` is dispatched before the rest of the command line loads, with one parser:
the argument shapes agents use all parse, and the heavy packages stay unloaded."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._emit import Arguments, parsed_arguments, plain_arguments

RALPH = [sys.executable, "-m", "pipeline.app.cli"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A folder whose marker names an events file, as a run leaves it for its agents."""
    (tmp_path / ".ralph").mkdir()
    (tmp_path / ".ralph" / "events-r.jsonl").touch()
    (tmp_path / ".ralph" / "current-events").write_text(".ralph/events-r.jsonl")
    return tmp_path


def _lines(workspace: Path) -> list[dict[str, object]]:
    text = (workspace / ".ralph" / "events-r.jsonl").read_bytes()
    return [orjson.loads(line) for line in text.splitlines() if line]


@pytest.mark.parametrize(
    ("arguments", "topic", "payload"),
    [
        (["build.done"], "build.done", None),
        (["note", "some text"], "note", "some text"),
        (["progress", "--json", '{"a": 1}'], "progress", {"a": 1}),
        (["--json", "progress", "[1, 2]"], "progress", [1, 2]),
        (["progress", "[3]", "--json"], "progress", [3]),
        (["note", "--", "-5 degrees"], "note", "-5 degrees"),
    ],
)
def test_the_shapes_agents_use_are_parsed(
    workspace: Path, arguments: list[str], topic: str, payload: object
) -> None:
    """Options before, between and after the positionals, and ``--`` before a payload that
    looks like an option."""
    result = subprocess.run(
        [*RALPH, "emit", *arguments], cwd=workspace, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Event emitted: {topic}\n"
    (line,) = _lines(workspace)
    assert (line["topic"], line["payload"]) == (topic, payload)


def test_bad_input_is_a_usage_error_and_writes_nothing(workspace: Path) -> None:
    """No topic, an unknown option, a bad topic, bad JSON: exit 2 with one error line."""
    for arguments in ([], ["t", "--yaml"], ["a..b"], ["t", "--json", "{"]):
        result = subprocess.run(
            [*RALPH, "emit", *arguments], cwd=workspace, capture_output=True, text=True
        )
        assert result.returncode == 2, (arguments, result.stderr)
        assert "error:" in result.stderr
        assert "Traceback" not in result.stderr
    assert _lines(workspace) == []


def test_emit_loads_neither_typer_nor_the_engine(workspace: Path) -> None:
    """What makes it fast, checked directly: the modules ``ralph emit`` leaves unloaded."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['ralph', 'emit', 'build.done']\n"
        "try:\n"
        "    runpy.run_module('pipeline.app.cli', run_name='__main__')\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "heavy = [m for m in ('typer', 'rich', 'cattrs', 'pipeline.engine', 'pipeline.events',"
        " 'pipeline.handlers.store', 'jsonschema', 'orjson') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=workspace, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip().endswith("[]"), result.stdout


def test_ralph_help_lists_emit_and_its_help_is_the_lean_parsers(workspace: Path) -> None:
    """``ralph --help`` names emit with its purpose; ``ralph emit --help`` shows its usage."""
    listed = subprocess.run([*RALPH, "--help"], cwd=workspace, capture_output=True, text=True)
    assert "emit" in listed.stdout
    assert "Append a topic" in listed.stdout
    own = subprocess.run([*RALPH, "emit", "--help"], cwd=workspace, capture_output=True, text=True)
    assert own.returncode == 0
    assert "usage: ralph emit" in own.stdout


def _fields(arguments: Arguments) -> tuple[object, ...]:
    return (arguments.topic, arguments.payload, arguments.as_json, arguments.payload_file)


_TOKENS = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["--json", "-", "--", "--file", "-5", "--help", "--js", "--json=1", ""]),
)


@given(argv=st.lists(_TOKENS, max_size=4))
def test_the_plain_reading_agrees_with_argparse_wherever_it_reads(argv: list[str]) -> None:
    """Wherever the lean path reads an argument list without argparse, argparse reads it the
    same; what the lean path declines is left to argparse whole."""
    plain = plain_arguments(argv)
    if plain is not None:
        assert _fields(parsed_arguments(argv)) == _fields(plain)


@pytest.mark.parametrize(
    "argv",
    [["t"], ["t", "p"], ["t", "p", "--json"], ["--json", "t", "{}"], ["t", ""], ["t", "a b"]],
)
def test_the_plain_shapes_skip_argparse(argv: list[str]) -> None:
    """The shapes agents use most are read without building argparse (what keeps emit fast)."""
    plain = plain_arguments(argv)
    assert plain is not None
    assert _fields(plain) == _fields(parsed_arguments(argv))


@pytest.mark.parametrize(
    "argv", [[], ["t", "-"], ["t", "--file", "f"], ["--", "-x"], ["t", "--help"], ["a", "b", "c"]]
)
def test_anything_else_is_left_to_argparse(argv: list[str]) -> None:
    assert plain_arguments(argv) is None


@pytest.mark.parametrize("kind", ["commit_message", "format_correction"])
def test_a_prompt_that_asks_for_a_file_only_is_told_ralph_will_not_act(
    workspace: Path, kind: str
) -> None:
    """In a commit message's or a formatting correction's turn (``RALPH_PROMPT_KIND``), ralph
    takes only memory and task notes: ``ralph emit`` of a topic says it will not be acted on
    (the line is written, exit 0: the fold decides), a memory note is taken without a word,
    and in a working turn nothing is said."""

    def emit(prompt_kind: str, *arguments: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "RALPH_PROMPT_KIND": prompt_kind}
        argv = [*RALPH, "emit", *arguments]
        return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True)

    told = emit(kind, "LOOP_COMPLETE")
    assert told.returncode == 0, told.stderr
    assert "ralph takes only memory and task notes from it and will not act on" in told.stderr
    note = emit(kind, "ralph.memory.add", '{"id": "m-1", "text": "say why"}', "--json")
    assert (note.returncode, note.stderr) == (0, "")
    working = emit("development", "LOOP_COMPLETE")
    assert (working.returncode, working.stderr) == (0, "")
    topics = [line["topic"] for line in _lines(workspace)]
    assert topics == ["LOOP_COMPLETE", "ralph.memory.add", "LOOP_COMPLETE"]


def test_the_file_only_kinds_are_the_pure_cores() -> None:
    """The lean command's spelled-out kinds are the fold's :data:`FILE_ONLY_PROMPTS`."""
    from pipeline.app.cli._emit import FILE_ONLY_KINDS
    from pipeline.core.state import FILE_ONLY_PROMPTS

    assert {kind.value for kind in FILE_ONLY_PROMPTS} == FILE_ONLY_KINDS


def test_the_note_prefixes_name_the_context_topics() -> None:
    """Every memory or task note's topic starts with one of the lean command's prefixes."""
    from pipeline.app.cli._emit import NOTE_PREFIXES
    from pipeline.events import CONTEXT_TOPICS

    assert all(topic.startswith(NOTE_PREFIXES) for topic in CONTEXT_TOPICS)
    assert {topic.rsplit(".", 1)[0] + "." for topic in CONTEXT_TOPICS} == set(NOTE_PREFIXES)
