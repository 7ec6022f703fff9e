"""Moving the target to the replayed head (I/O: git).

The target moves only by compare-and-swap (``git update-ref REF NEW OLD``), so it is at the
old commit or the new one, never anything between, and a target someone else moved is
reported, not overwritten. A work tree that has the target checked out follows by a two-tree
read (``read-tree -m -u OLD NEW``), which carries its own changes along and is the same
whether it ran before or not: a resume after kill -9 runs it again. The run's branch follows
the target last, so a failed integration leaves it as it was.

Before the compare-and-swap a failure is an ``IntegrationFailed``. After it, a work tree that
cannot follow puts the target back (compare-and-swap again) and the integration fails; any
other error is raised and the log says nothing yet: the next ``ralph worktrees merge`` finds
the target at the new commit (or at a commit built on it) and finishes the step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.effects import MoveTarget
from pipeline.events import (
    Instant,
    IntegrationFailed,
    PipelineEvent,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.handlers.integration._scratch import drop_scratch, git_out, holds, revision
from pipeline.handlers.runtime import GitError, GitPolicy, branch_worktrees, run_git

__all__ = ["move_target"]


def move_target(
    effect: MoveTarget, root: Path, scratch: Path, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """Move the target, then the run's branch, to the replayed head, each with the work
    tree that has it checked out."""
    ref = f"refs/heads/{effect.target}"
    found = revision(root, ref)
    beyond = found is not None and found not in (effect.old, effect.new)
    if beyond and found is not None and holds(root, found, effect.new):
        # Our move was made (the process died before its fact), and someone built on it.
        return _landed(effect, root, scratch, clock)
    if found not in (effect.old, effect.new):
        return (TargetMoved(effect.old, found or "(no branch)", clock()),)
    holder = _checked_out(root, ref)
    if found == effect.old:
        if not holds(root, effect.new, effect.old):
            # Never a move that would drop what the target holds: a fast-forward only.
            reason = f"{effect.new[:12]} does not hold {effect.target}'s {effect.old[:12]}"
            return (IntegrationFailed(reason, clock()),)
        if holder is not None:
            stale = _would_not_follow(holder, effect.old, effect.new)
            if stale:
                reason = (
                    f"{holder} has changes in files the merge brings ({stale}): commit or "
                    "stash them, then merge again"
                )
                return (IntegrationFailed(reason, clock()),)
        message = f"ralph: land {effect.branch}"
        if not _swap(root, ref, effect.new, effect.old, message):
            now = revision(root, ref)
            if now != effect.new:
                return (TargetMoved(effect.old, now or "(no branch)", clock()),)
    if holder is not None:
        try:
            git_out(holder, "read-tree", "-m", "-u", effect.old, effect.new)
        except GitError as error:
            # The work tree cannot follow: the target goes back, so nobody commits the old
            # files over the new commit. Only when nobody built on it meanwhile.
            if not _swap(root, ref, effect.old, effect.new, "ralph: undo the landing"):
                raise
            reason = f"{holder} could not follow {effect.target} ({error}); it is back where it was"
            return (IntegrationFailed(reason, clock()),)
    return _landed(effect, root, scratch, clock)


def _landed(
    effect: MoveTarget, root: Path, scratch: Path, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """The target is at the replayed head: the run's branch follows, the scratch goes."""
    _follow(root, f"refs/heads/{effect.branch}", effect.tip, effect.new)
    drop_scratch(root, scratch)
    return (TargetAdvanced(effect.target, effect.old, effect.new, clock()),)


def _swap(root: Path, ref: str, new: str, old: str, message: str) -> bool:
    """Whether ``ref`` moved from ``old`` to ``new`` (compare-and-swap: only from ``old``)."""
    done = run_git(
        root, "update-ref", "-m", message, ref, new, old, policy=GitPolicy(), check=False
    )
    return done.returncode == 0


def _follow(root: Path, ref: str, tip: str, new: str) -> None:
    """Move the run's branch from ``tip`` to ``new`` (compare-and-swap) with its worktree; a
    branch that moved elsewhere meanwhile, or whose worktree cannot follow, stays (its
    commits are on the target; only ``ralph worktrees clean`` needs ``--force`` then)."""
    if tip == new:
        return
    if revision(root, ref) == tip and not _swap(root, ref, new, tip, "ralph: landed"):
        return
    if revision(root, ref) != new:
        return
    holder = _checked_out(root, ref)
    if holder is None:
        return
    try:
        git_out(holder, "read-tree", "-m", "-u", tip, new)
    except GitError:
        _swap(root, ref, tip, new, "ralph: the worktree could not follow")


def _would_not_follow(holder: Path, old: str, new: str) -> str:
    """Why the work tree at ``holder`` could not follow its branch from ``old`` to ``new``
    (files it changed that the move changes too), or ""."""
    done = run_git(holder, "read-tree", "-m", "-u", "-n", old, new, policy=GitPolicy(), check=False)
    if done.returncode == 0:
        return ""
    said = (done.stderr or done.stdout).strip().splitlines()
    return said[0] if said else "git read-tree refused"


def _checked_out(root: Path, ref: str) -> Path | None:
    """The work tree that has branch ``ref`` checked out, if one has."""
    return next((path for path, _head, branch in branch_worktrees(root) if branch == ref), None)
