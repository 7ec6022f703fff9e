"""Every command that needs an optional extra, run where the extra is not installed: one line
naming the extra and how to install it, a usage exit status, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.workspace import ROOT, make_workspace, scripted

pytestmark = pytest.mark.slow  # a ralph process per command

WITHOUT = """
import sys
from importlib.abc import MetaPathFinder

BLOCKED = frozenset(sys.argv[1].split(","))


class NotInstalled(MetaPathFinder):
    '''Finds the extra's modules missing, as an environment without the extra does.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
sys.argv = ["ralph", *sys.argv[2:]]
from pipeline.app.cli import main

main()
"""
"""``python -c WITHOUT MODULES ARGS...``: ``ralph ARGS`` with ``MODULES`` (comma separated,
top-level names) unimportable, whatever the virtual environment holds."""

EXTRAS = {
    "serve": "starlette,uvicorn,sse_starlette,multipart,python_multipart",
    "postgres": "psycopg,psycopg_binary,psycopg_pool",
    "otel": "opentelemetry",
}
"""Each extra's modules (pyproject.toml's ``[project.optional-dependencies]``)."""

URL = "postgresql://ralph@127.0.0.1:9/nowhere"

COMMANDS = [
    ("serve", ["serve"]),
    ("postgres", ["serve", URL]),
    ("postgres", ["run", "--store", URL]),
    ("postgres", ["status", "--store", URL]),
    ("postgres", ["runs", URL]),
    ("postgres", ["submit", "--store", URL]),
    ("postgres", ["worker", "--store", URL]),
    ("otel", ["run", "--otel-file", "spans.jsonl"]),
]
"""The commands that need an extra, as a newcomer who has only ``pip install -e .`` types them."""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository ready to run (its agent never starts: each command stops before)."""
    root = tmp_path_factory.mktemp("extras") / "ws"
    return make_workspace(root, scripts={"s.toml": ""}, agents={"main": scripted("s.toml")})


@pytest.mark.parametrize(("extra", "args"), COMMANDS, ids=[" ".join(a) for _, a in COMMANDS])
def test_a_command_without_its_extra_says_which_and_how_to_install_it(
    workspace: Path, extra: str, args: list[str]
) -> None:
    """The extra's name and its pip command on standard error, exit 2 (usage) or 4 (store),
    and no traceback (``ralph serve`` used to end in ``No module named 'starlette'``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    env.pop("RALPH_STORE", None)
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT, EXTRAS[extra], *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert f"pip install 'ralph-pipeline[{extra}]'" in result.stderr, result.stderr
    assert result.returncode in (2, 4), result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
