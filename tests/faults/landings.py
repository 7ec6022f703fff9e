"""The landing fault tests' repositories: completed runs in worktrees of their own, ready to
land, and ``ralph worktrees merge`` stopped at a chosen git command (:mod:`.gitfault`)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from tests.faults.gitfault import install
from tests.runtime.workspace import (
    OWN_FILE,
    completed_runs,
    gate,
    git,
    log_of,
    make_workspace,
    ralph,
)

__all__ = [
    "OWN_FILE",
    "completed_runs",
    "gate",
    "git",
    "landing_repository",
    "log_of",
    "stopped_merge",
]


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
