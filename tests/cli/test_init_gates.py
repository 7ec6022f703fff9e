"""The ``[[gates]]`` example ``ralph init`` writes: commented, so a fresh starter has no gate
(a gate's program missing here would refuse every run), running the test command the
repository's files name (a placeholder when none is found); uncommented, it is a valid
gate after each developer task, and the tamper screen turns on with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.app.cli._init import starter_config, write_starter
from pipeline.app.workflows import load_preset, preset_names
from pipeline.core.config import GateConfig, parse_config
from pipeline.core.sandbox import SandboxMode

PYTEST = ["python3", "-m", "pytest", "-q"]

DETECTIONS = [
    ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, PYTEST),
    ({"pytest.ini": "[pytest]\n"}, PYTEST),
    ({"setup.cfg": "[tool:pytest]\naddopts = -q\n"}, PYTEST),
    ({"tests/test_x.py": "def test_x():\n    assert True\n"}, PYTEST),
    (
        {".venv/bin/python": "", "tests/test_x.py": "def test_x():\n    assert True\n"},
        [".venv/bin/python", "-m", "pytest", "-q"],
    ),
    ({"package.json": '{"scripts": {"test": "jest"}}'}, ["npm", "test"]),
    ({"Cargo.toml": "[package]\nname = 'x'\n"}, ["cargo", "test"]),
    ({"go.mod": "module x\n"}, ["go", "test", "./..."]),
    ({"Makefile": "test:\n\tfalse\n"}, ["make", "test"]),
]
IDS = ["pyproject", "pytest.ini", "setup.cfg", "tests-dir", "venv", "npm", "cargo", "go", "make"]

NOTHING = [
    {},
    {"README.md": "no tests here\n"},
    {"package.json": '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'},
]
"""Workspaces where no test command is found (npm's placeholder script is none)."""


def uncommented(text: str) -> str:
    """``text`` with the commented ``[[gates]]`` block made live, as a person would: the
    ``# `` taken off its table line and every line after it up to the blank line."""
    lines = text.splitlines()
    start = lines.index("# [[gates]]")
    end = lines.index("", start)
    live = [line.removeprefix("# ") for line in lines[start:end]]
    return "\n".join([*lines[:start], *live, *lines[end:]]) + "\n"


def starter_in(root: Path, files: dict[str, str]) -> str:
    """The text ``ralph init`` writes in a workspace holding ``files``."""
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content)
    path, _validate = write_starter(root)
    return path.read_text()


def the_gate(argv: list[str]) -> GateConfig:
    """The gate the block describes, running ``argv``."""
    return GateConfig(name="tests", argv=tuple(argv), on=("iteration",), timeout_s=600)


@pytest.mark.parametrize(("files", "argv"), DETECTIONS, ids=IDS)
def test_init_writes_the_detected_test_command_as_a_commented_gate(
    tmp_path: Path, files: dict[str, str], argv: list[str]
) -> None:
    """The starter parses with no gate and no tamper screen; the commented block runs the
    command found, and the block points to the gates document and names the screen."""
    text = starter_in(tmp_path, files)
    config = parse_config(text, "ralph.toml")
    assert config.gates == ()
    assert config.loop_policy().tamper is None
    assert "# [[gates]]" in text
    assert "docs/architecture/gates.md" in text
    assert "tamper screen" in text
    assert list(config.validate) == argv


@pytest.mark.parametrize(("files", "argv"), DETECTIONS, ids=IDS)
def test_uncommenting_the_gate_gives_that_gate_and_the_tamper_screen(
    tmp_path: Path, files: dict[str, str], argv: list[str]
) -> None:
    """Taking the ``# `` off the block is a valid configuration whose one gate runs the
    command found after each developer task, blocking; the screen is on with it."""
    config = parse_config(uncommented(starter_in(tmp_path, files)), "ralph.toml")
    assert config.gates == (the_gate(argv),)
    assert list(config.validate) == argv
    policy = config.loop_policy()
    assert policy.tamper is not None
    assert policy.postconditions is not None


@pytest.mark.parametrize("files", NOTHING, ids=["empty", "readme", "npm-placeholder"])
def test_with_no_test_command_the_example_is_a_placeholder(
    tmp_path: Path, files: dict[str, str]
) -> None:
    """Nothing detected: the block is a generic example saying to set argv, and uncommented
    it still parses (its program is only looked up when a run starts)."""
    text = starter_in(tmp_path, files)
    assert parse_config(text, "ralph.toml").gates == ()
    assert "Uncomment with your test command as argv" in text
    config = parse_config(uncommented(text), "ralph.toml")
    assert config.gates == (the_gate(["pytest", "-q"]),)
    assert config.validate == ()


@pytest.mark.parametrize("name", preset_names())
def test_the_gate_example_is_valid_with_every_workflow_preset(name: str) -> None:
    """``ralph init --preset``: the uncommented block parses with each preset's loop (an
    iteration gate is valid in a read-only workflow too)."""
    text = starter_config(["claude"], ("make", "test"), load_preset(name))
    config = parse_config(uncommented(text), "ralph.toml")
    assert config.gates == (the_gate(["make", "test"]),)


def test_the_starter_asks_for_the_sandbox_where_it_works() -> None:
    text = starter_config(["claude"])
    assert "[sandbox]" in text
    assert parse_config(text, "ralph.toml").sandbox.policy().mode is SandboxMode.AUTO
