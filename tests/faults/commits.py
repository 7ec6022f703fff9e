"""What the fault tests compare: the commits git holds for a run against its log's facts."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.events import CommitCreated
from tests.runtime.workspace import stored_events

__all__ = ["commits_in_git", "commits_in_log"]


def commits_in_git(root: Path) -> list[tuple[str, str]]:
    """``(sha, effect id)`` of every commit on HEAD carrying a ``Ralph-Effect`` trailer."""
    shown = subprocess.run(
        ["git", "log", "--format=%H %(trailers:key=Ralph-Effect,valueonly,separator=%x2C)"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = []
    for line in shown.splitlines():
        sha, _, effect = line.partition(" ")
        if effect.strip():
            found.append((sha, effect.strip()))
    return found


def commits_in_log(root: Path) -> list[str]:
    """The shas of the run's ``CommitCreated`` facts, in log order (doubles kept)."""
    return [e.sha for e in stored_events(root) if isinstance(e, CommitCreated)]
