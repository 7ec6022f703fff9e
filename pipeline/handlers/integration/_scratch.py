"""The scratch worktree an integration replays and gates a branch in (I/O: git, files).

It is detached, beside the runs' worktrees (``<workspace>-worktrees/.integration-<run id>``,
where a sandboxed gate sees it as a run's worktree, and not inside the main worktree, which
a sandbox hides), and ``ralph worktrees list`` does not show it; the branch being integrated
and its own worktree are never touched by a replay.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from pipeline.handlers.runtime import GitPolicy, WorkspaceLayout, git_out, run_git

__all__ = ["RUN_ID_PATTERN", "group_record", "holds", "revision", "scratch_folder"]


def revision(root: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the repository of ``root``, or None when it names none."""
    named = git_out(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return named.strip() or None


RUN_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
"""What a run id must look like to name a scratch folder: it comes from the worktree's own
store, which an agent could have written, and the folder is removed with everything in it."""


def holds(root: Path, tip: str, commit: str) -> bool:
    """Whether ``tip``'s history holds ``commit`` (by its id)."""
    done = run_git(
        root, "merge-base", "--is-ancestor", commit, tip, policy=GitPolicy(), check=False
    )
    return done.returncode == 0


def scratch_folder(root: Path, run_id: str) -> Path:
    """Where run ``run_id``'s integration replays its branch, for the repository of ``root``;
    ``ValueError`` for a run id that could name any other folder."""
    if not RUN_ID_PATTERN.fullmatch(run_id) or ".." in run_id:
        raise ValueError(f"run id {run_id!r} cannot name a folder")
    return root.parent / f"{root.name}-worktrees" / f".integration-{run_id}"


def group_record(root: Path, run_id: str) -> Path:
    """Where the process group at work in run ``run_id``'s integration (a gate, the merger)
    is recorded: in the repository's own ralph folder (``.git/ralph``), not in the scratch
    worktree, which is made anew (and which its gate could write), so that the next
    integrator finds and ends what a killed one left running."""
    scratch_folder(root, run_id)  # the same run ids only
    return WorkspaceLayout(root=root).state_dir / "integration" / f"{run_id}.group.json"
