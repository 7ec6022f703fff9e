"""A small repository whose test fails, run by ``ralph run`` with a real agent CLI.

``app.py`` answers 41 where ``test_app.py`` wants 42; the validation is the test itself. The
scripted model (``tests.model_server.fixing_pipeline``) makes the agent write the
fix with its own tools, publish ``build.done`` from its shell and hand in each role's report.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from pipeline.core.serialization import encode_event
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.support import init_repository

PYTHON = sys.executable
FIXED_APP = "def answer():\n    return 42\n"
"""What the agent writes to ``app.py``."""


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` and return its output."""
    done = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True)
    return done.stdout


def failing_repo(root: Path, agent_toml: str, budgets: str = "") -> Path:
    """A git repository at ``root`` with a failing test and ``ralph.toml`` holding
    ``agent_toml`` (the ``[agents.NAME]`` tables) with every role's chain ``["main"]``.

    ``ralph.toml`` and ``PROMPT.md`` are left untracked, as ``ralph init`` leaves them.
    """
    init_repository(root)
    (root / "app.py").write_text("def answer():\n    return 41\n")
    (root / "test_app.py").write_text(
        "import unittest\n\nimport app\n\n\n"
        "class AnswerTest(unittest.TestCase):\n"
        "    def test_answer(self):\n"
        "        self.assertEqual(app.answer(), 42)\n"
    )
    git(root, "add", "app.py", "test_app.py")
    git(root, "commit", "--quiet", "-m", "A failing test")
    (root / "PROMPT.md").write_text("Make the test in test_app.py pass by fixing app.py.\n")
    (root / "ralph.toml").write_text(
        f'validate = ["{PYTHON}", "-m", "unittest", "-q"]\n\n'
        "[budgets]\nmax_iterations = 2\nmax_review_passes = 1\nmax_retries_per_agent = 1\n"
        f"backoff_base_ms = 10\nbackoff_cap_ms = 20\n{budgets}\n\n"
        f'{agent_toml}\n\n[chains]\ndefault = ["main"]\n'
    )
    return root


def run_ralph(
    root: Path, env: Mapping[str, str], *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``ralph ARGS -C root`` as a subprocess with ``env`` added to this environment."""
    return subprocess.run(
        [PYTHON, "-m", "pipeline.app.cli", *args, "-C", str(root)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def stored_events(root: Path) -> list[dict[str, Any]]:
    """Every fact of the latest run in ``root``'s store, as JSON objects: each as ``ralph
    events --format jsonl`` prints it (its wire encoding), read in this process rather than
    by a second interpreter per call (``ralph events`` has tests of its own)."""
    path = WorkspaceLayout(root=root).store
    assert path.is_file(), f"no event store at {path}"  # opening one would make it
    with SqliteEventStore(path) as store:
        run = store.choose_run(None)
        return [orjson.loads(encode_event(event)) for event in store.read(run)]


def path_with(program: Path) -> str:
    """PATH with the folder of ``program`` first (and Node's, for npm CLIs)."""
    return f"{program.parent}{os.pathsep}{os.environ.get('PATH', '')}"


def assert_sandboxed(root: Path, server_url: str) -> None:
    """The run in ``root`` ran its agents in the sandbox (on by default where bubblewrap
    works, as in CI), the model server's ``127.0.0.1:PORT`` among what they could reach."""
    if shutil.which("bwrap") is None and not os.environ.get("CI"):
        return  # no bubblewrap here: the run went on unsandboxed, and said so
    checked = [fact for fact in stored_events(root) if fact["type"] == "lifecycle.sandbox_checked"]
    assert [fact["on"] for fact in checked] == [True], checked
    assert f"127.0.0.1:{urlsplit(server_url).port}" in checked[0]["endpoints"], checked
