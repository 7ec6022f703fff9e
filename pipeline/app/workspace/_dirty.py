"""The person's own uncommitted changes when a run starts (I/O: one ``git status``).

ralph commits everything the agents changed; changes the person made before the run would go
into the same commits. A new run therefore refuses a dirty work tree (``ralph run``), naming
the paths and how to go on: commit or stash them, or ``--allow-dirty``, which keeps exactly
those paths out of the run's commits. ralph's own files (its folders, ``ralph.toml``, the
prompt file, a store in the work tree) never count: ``ralph init`` leaves them untracked.
A remote ticket (``ralph submit --remote``) runs from HEAD on another host, so the clone's
uncommitted changes to tracked files would silently stay behind: it refuses them the same
way (untracked files do not count there: the setup files among them travel with the ticket).
"""

from __future__ import annotations

from pathlib import Path

from pipeline.handlers.runtime import OWN_FOLDERS, GitPolicy, run_git

__all__ = ["dirty_message", "dirty_paths"]

_SHOWN = 10
"""How many dirty paths the refusal names."""


def dirty_paths(root: Path, own: tuple[str, ...], *, untracked: bool = True) -> tuple[str, ...]:
    """The paths (relative to ``root``) with uncommitted changes, untracked ones included
    unless not ``untracked`` (an untracked folder as one path), but ralph's own folders and
    the ``own`` files. Raises ``GitError`` when git fails."""
    done = run_git(
        root,
        "status",
        "--porcelain=v1",
        "-z",
        # An untracked folder is one path (a virtualenv is not thousands of lines).
        "--untracked-files=normal" if untracked else "--untracked-files=no",
        "--no-renames",
        "--ignore-submodules=none",
        policy=GitPolicy(),
    )
    kept = (*OWN_FOLDERS, *own)
    paths: list[str] = []
    for entry in done.stdout.split("\0"):
        path = entry[3:].rstrip("/")
        if path and not any(path == k or path.startswith(k + "/") for k in kept):
            paths.append(path)
    return tuple(dict.fromkeys(paths))


def dirty_message(root: Path, paths: tuple[str, ...], *, remote: bool = False) -> str:
    """The refusal of a new run (a ``remote`` ticket's) on a dirty tree: the paths, and the
    ways to go on."""
    shown = ", ".join(paths[:_SHOWN]) + (
        f" and {len(paths) - _SHOWN} more" if len(paths) > _SHOWN else ""
    )
    if remote:
        return (
            f"{root} has uncommitted changes that a remote ticket leaves behind (its run starts "
            f"from HEAD, as the remote holds it): {shown}. Commit and push them first, or pass "
            "--allow-dirty to submit HEAD without them"
        )
    return (
        f"{root} has uncommitted changes that ralph's commits would take: {shown}. "
        "Commit or stash them (git stash --include-untracked) first, or pass --allow-dirty "
        "to keep exactly these paths out of the run's commits"
    )
