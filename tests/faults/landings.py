"""The landing fault tests' repositories: completed runs in worktrees of their own, ready to
land, and ``ralph worktrees merge`` stopped at a chosen git command (:mod:`.gitfault`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from pipeline.events import PipelineEvent
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.faults.gitfault import install
from tests.runtime.workspace import SHELL_REPORTS, make_workspace, ralph, start_ralph

__all__ = [
    "OWN_FILE",
    "completed_runs",
    "gate",
    "git",
    "landing_repository",
    "log_of",
    "stopped_merge",
]

OWN_FILE = SHELL_REPORTS.replace('echo "$$" >> work.txt', 'echo "$PWD" > "${PWD##*/}.txt"')
"""An agent that reports success and writes a file named after its worktree."""


def git(root: Path, *args: str) -> str:
    """``git ARGS`` in ``root`` (the real one), its output stripped."""
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def gate(name: str, script: str, timeout_s: int = 60) -> str:
    """A ``[[gates]]`` table running ``sh -c SCRIPT``."""
    return (
        f'[[gates]]\nname = "{name}"\nargv = ["sh", "-c", {json.dumps(script)}]\n'
        f"timeout_s = {timeout_s}\n"
    )


def landing_repository(tmp_path: Path, gates: str = "", files: int = 0) -> Path:
    """A repository whose runs' agent writes a file of its own, with ``gates``; ``files``
    more committed files make a checkout (a ``worktree add``) take a while."""
    root = make_workspace(
        tmp_path / "repo", scripts={}, agents={"main": ["sh", "-c", OWN_FILE]}, extra=gates
    )
    if files:
        bulk = root / "bulk"
        bulk.mkdir()
        for number in range(files):
            (bulk / f"f{number}.txt").write_text(f"{number}\n")
        git(root, "add", "bulk")
        git(root, "commit", "--quiet", "-m", "bulk")
    return root


def completed_runs(root: Path, count: int) -> list[dict[str, object]]:
    """``count`` runs at once, each in its own worktree, all completed; their listing."""
    started = [start_ralph("run", "--worktree", "--quiet", cwd=root) for _ in range(count)]
    for process in started:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, out + err
    shown = ralph("worktrees", "list", "--json", cwd=root)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def log_of(worktree: dict[str, object]) -> list[PipelineEvent]:
    """The log of the run that worked in ``worktree`` (a listing's row)."""
    with SqliteEventStore(WorkspaceLayout(root=Path(str(worktree["path"]))).store) as store:
        return list(store.read(str(worktree["run"])))


def stopped_merge(
    root: Path,
    tmp_path: Path,
    *args: str,
    after: str,
    signum: signal.Signals = signal.SIGKILL,
    when: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """``ralph ARGS`` (a merge, or a run that lands) given ``signum`` right after its first
    git command starting with ``after`` (with ``when``: inside it, once a path matching that
    glob exists); the fault must have fired."""
    armed = tmp_path / "armed"
    armed.touch()
    env = {
        "PATH": install(tmp_path / "bin"),
        "GITFAULT_AFTER": after,
        "GITFAULT_ARMED": str(armed),
        "GITFAULT_SIGNAL": signum.name,
        **({"GITFAULT_WHEN": when} if when else {}),
    }
    done = ralph(*args, cwd=root, env={**os.environ, **env})
    assert not armed.exists(), f"the merge never ran {after!r}: {done.stdout}{done.stderr}"
    return done
