"""The scratch worktree an integration replays and gates a branch in (I/O: git, files).

It is detached, inside the repository's git folder (``ralph-integration/<run id>``), so
nobody works in it by mistake and ``ralph worktrees list`` does not show it; the branch being
integrated and its own worktree are never touched by a replay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.handlers.runtime import GitPolicy, run_git

__all__ = ["at_commit", "drop_scratch", "fresh_scratch", "git_out", "revision", "scratch_folder"]


def git_out(root: Path, *args: str, policy: GitPolicy | None = None) -> str:
    """The output of ralph's own git in ``root`` (raises ``GitError`` when it fails)."""
    return run_git(root, *args, policy=policy or GitPolicy()).stdout


def revision(root: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the repository of ``root``, or None when it names none."""
    done = run_git(
        root,
        "rev-parse",
        "--verify",
        "--quiet",
        f"{ref}^{{commit}}",
        policy=GitPolicy(),
        check=False,
    )
    return done.stdout.strip() or None


def scratch_folder(root: Path, run_id: str) -> Path:
    """Where run ``run_id``'s integration replays its branch, for the repository of ``root``."""
    common = git_out(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip()
    return Path(common) / "ralph-integration" / run_id


def fresh_scratch(root: Path, scratch: Path, commit: str) -> None:
    """A scratch worktree at ``commit``, detached, made anew (what a killed integration left
    there goes first)."""
    drop_scratch(root, scratch)
    scratch.parent.mkdir(parents=True, exist_ok=True)
    git_out(root, "worktree", "add", "--detach", "--quiet", str(scratch), commit)


def at_commit(root: Path, scratch: Path, commit: str) -> None:
    """The scratch worktree at ``commit`` with nothing changed in it: kept when it already is
    (a gate after a resume), made anew otherwise."""
    if (scratch / ".git").is_file():
        head = run_git(scratch, "rev-parse", "HEAD", policy=GitPolicy(), check=False).stdout
        status = run_git(scratch, "status", "--porcelain", policy=GitPolicy(), check=False)
        if head.strip() == commit and status.returncode == 0 and not status.stdout.strip():
            return
    fresh_scratch(root, scratch, commit)


def drop_scratch(root: Path, scratch: Path) -> None:
    """Remove the scratch worktree, whatever state a killed integration left it in."""
    if scratch.exists():
        run_git(
            root, "worktree", "remove", "--force", str(scratch), policy=GitPolicy(), check=False
        )
        shutil.rmtree(scratch, ignore_errors=True)
    run_git(root, "worktree", "prune", policy=GitPolicy(), check=False)
