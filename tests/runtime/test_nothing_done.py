"""A new user's first run: ``ralph init`` finds the repository's test command, and an agent
that only claims completion does not end a run as a success (real ``ralph`` processes)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from pipeline.core.config import parse_config
from tests.runtime.workspace import ralph
from tests.support import init_repository

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

_PYTEST = ["python3", "-m", "pytest", "-q"]

_CLAIMER = """#!/bin/sh
# Reports a plan and a finished iteration, claims completion, and changes nothing.
mkdir -p .agent/out
echo '1. nothing' > .agent/out/plan.md
printf 'completed\\nnothing to do\\n' > .agent/out/status
: > .agent/out/issues.md
ralph emit LOOP_COMPLETE "all done"
"""


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"Makefile": "all:\n\ttrue\n\ntest:\n\tfalse\n"}, ["make", "test"]),
        ({"package.json": '{"scripts": {"test": "jest"}}'}, ["npm", "test"]),
        ({"Cargo.toml": "[package]\nname = 'x'\n"}, ["cargo", "test"]),
        ({"go.mod": "module x\n"}, ["go", "test", "./..."]),
        (
            {"tests/test_x.py": "def test_x():\n    assert False\n"},
            ["python3", "-m", "pytest", "-q"],
        ),
        ({"pyproject.toml": "[tool.pytest.ini_options]\n"}, ["python3", "-m", "pytest", "-q"]),
    ],
    ids=["make", "npm", "cargo", "go", "pytest-tests", "pytest-config"],
)
def test_init_turns_validation_on_with_the_repositorys_test_command(
    tmp_path: Path, files: dict[str, str], expected: list[str]
) -> None:
    """The starter's ``validate`` is the test command the repository's files name."""
    root = init_repository(tmp_path / "ws")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    result = ralph("init", "-C", str(root), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    config = parse_config((root / "ralph.toml").read_text(), "ralph.toml")
    assert list(config.validate) == expected
    assert " ".join(expected) in result.stdout


def test_init_without_a_test_command_says_so(tmp_path: Path) -> None:
    """Nothing to detect (and npm's placeholder test script is none): validate is left
    unset, and ``ralph init`` warns that it should be set."""
    root = init_repository(tmp_path / "ws")
    (root / "package.json").write_text(
        '{"scripts": {"test": "echo \\"Error: no test specified\\" && exit 1"}}'
    )
    result = ralph("init", "-C", str(root), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert parse_config((root / "ralph.toml").read_text(), "ralph.toml").validate == ()
    assert "no test command found" in result.stderr


def test_an_agent_that_only_claims_completion_is_no_success(tmp_path: Path) -> None:
    """The README's flow (``ralph init``, a prompt, ``ralph run``) with an agent that only
    publishes LOOP_COMPLETE, in a repository whose tests fail: the run does not exit 0, says
    why, and makes no commit."""
    root = init_repository(tmp_path / "ws")
    (root / "Makefile").write_text("test:\n\t@echo 'FAIL: test_answer: 41 != 42'; false\n")
    (root / "README.md").write_text("a repository\n")
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=root, check=True)
    assert ralph("init", cwd=root).returncode == 0
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(_CLAIMER)
    agent.chmod(0o755)
    config = (root / "ralph.toml").read_text()
    config = re.sub(r"(?ms)^\[agents\.\w+\]\npreset = \"\w+\"\n", "", config)
    config = re.sub(r"(?m)^default = \[.*\]$", 'default = ["shell"]', config)
    config = config.replace(
        "[chains]", f'[agents.shell]\ncommand = ["{agent}"]\ntimeout_s = 60\n\n[chains]', 1
    )
    (root / "ralph.toml").write_text(config)
    (root / "PROMPT.md").write_text("Make the answer 42.\n")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    assert "Exit status 0" not in result.stdout
    after = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    assert after.stdout == head.stdout, "nothing was done, so nothing is committed"


def test_checks_that_pass_on_an_untouched_tree_end_no_changes(tmp_path: Path) -> None:
    """Validation passing with nothing committed ends ``no_changes``: exit 1, not a success."""
    root = init_repository(tmp_path / "ws")
    (root / "Makefile").write_text("test:\n\ttrue\n")
    (root / "README.md").write_text("a repository\n")
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "start"], cwd=root, check=True)
    agent = root.parent / "agent.sh"  # outside the repository: not a change to commit
    agent.write_text(_CLAIMER)
    agent.chmod(0o755)
    (root / "ralph.toml").write_text(
        f'validate = ["make", "test"]\n[agents.shell]\ncommand = ["{agent}"]\n'
        '[chains]\ndefault = ["shell"]\n'
    )
    (root / "PROMPT.md").write_text("Nothing to do.\n")
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Exit status 1: no_changes" in result.stdout
