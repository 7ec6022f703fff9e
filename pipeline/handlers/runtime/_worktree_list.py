"""The worktrees of a repository as git lists them (I/O: git)."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.handlers.runtime._gitcmd import GitPolicy, run_git_bytes

__all__ = ["branch_worktrees"]


def branch_worktrees(root: Path) -> list[tuple[Path, str, str]]:
    """(folder, head, branch ref) of each worktree of ``root``'s repository that has a branch
    checked out, as ``git worktree list --porcelain -z`` gives them (``-z``: a folder's name
    may hold a line break); detached ones are left out."""
    entries: list[tuple[Path, str, str]] = []
    path: Path | None = None
    head = ""
    listing = run_git_bytes(root, "worktree", "list", "--porcelain", "-z", policy=GitPolicy())
    for field in listing.stdout.split(b"\0"):
        line = os.fsdecode(field)
        if line.startswith("worktree "):
            path, head = Path(line.removeprefix("worktree ")), ""
        elif line.startswith("HEAD "):
            head = line.removeprefix("HEAD ")
        elif line.startswith("branch ") and path is not None:
            entries.append((path, head, line.removeprefix("branch ")))
    return entries
