"""The worktrees of a repository as git lists them, and ralph's scratch worktrees removed
(I/O: git)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from pipeline.handlers.runtime._gitcmd import PLAIN, GitPolicy, run_git, run_git_bytes
from pipeline.handlers.runtime._layout import git_dirs

__all__ = ["drop_scratch", "fresh_scratch", "worktree_entries"]


def worktree_entries(root: Path) -> list[dict[str, str]]:
    """Each worktree of ``root``'s repository as ``git worktree list --porcelain -z`` gives
    it (``-z``: a folder's name may hold a line break): its fields by name (``worktree``,
    ``HEAD``, ``branch``, ``locked``, ...; a field with no value maps to "")."""
    listing = run_git_bytes(root, "worktree", "list", "--porcelain", "-z")
    entries: list[dict[str, str]] = []
    fields: dict[str, str] = {}
    for field in [*listing.stdout.split(b"\0"), b""]:
        line = os.fsdecode(field)
        if line:
            key, _, value = line.partition(" ")
            fields[key] = value
        elif fields:  # an empty field ends an entry
            if "worktree" in fields:
                entries.append(fields)
            fields = {}
    return entries


def drop_scratch(root: Path, scratch: Path) -> None:
    """Remove one of ralph's scratch worktrees (a landing's, the pinned gates', the collection
    check's), whatever state a killed process left it in: a ``git worktree add`` killed
    half-way leaves it locked ("initializing", an ``index.lock``
    in its git folder), which ``remove --force`` and ``prune`` leave alone and which would
    refuse every later ``worktree add`` at that path ("missing but locked")."""
    dirs = git_dirs(root)
    if dirs is not None and not os.path.lexists(scratch) and not (dirs[1] / "worktrees").exists():
        # Nothing to drop, and no git run to say so (every run's end asks): no folder at the
        # path, and no linked worktree at all in the common folder, where ralph's git looks
        # (it is pointed there: ``pinned_locations``).
        return
    # The path is ralph's own: a lock on it is a killed `worktree add`'s, never a person's.
    run_git(root, "worktree", "unlock", str(scratch), check=False)
    if scratch.exists():
        run_git(root, "worktree", "remove", "-f", "-f", str(scratch), check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    run_git(root, "worktree", "prune", check=False)


def fresh_scratch(root: Path, scratch: Path, commit: str, policy: GitPolicy = PLAIN) -> None:
    """A scratch worktree of ``root`` at ``scratch``, detached at ``commit``, made anew: what
    a killed process left there goes first (:func:`drop_scratch`), so it is never reused.
    Raises :class:`GitError` when git cannot make it."""
    drop_scratch(root, scratch)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    add = ("worktree", "add", "--detach", "--quiet", str(scratch), commit)
    run_git(root, *add, policy=policy)
