"""Moving the target to the replayed head (I/O: git).

The target moves only by compare-and-swap (:class:`~._refs.TargetRefs`; here, ``git update-ref
REF NEW OLD``), so it is at the
old commit or the new one, never anything between, and a target someone else moved is
reported, not overwritten. A work tree that has the target checked out follows by a two-tree
read (``read-tree -m -u OLD NEW``), which carries its own changes along and is the same
whether it ran before or not: a resume after kill -9 runs it again. The run's branch follows
the target last, so a failed integration leaves it as it was.

Before the compare-and-swap a failure is an ``IntegrationFailed``. After it, a work tree that
cannot follow puts the target back (compare-and-swap again) and the integration fails; any
other error is raised and the log says nothing yet: the next ``ralph worktrees merge`` finds
the target at the new commit (or at a commit built on it) and finishes the step.

Killed between the compare-and-swap and the two-tree read, the work tree is left behind its
branch: its index still at the old commit, the landed files staged as deletions, so that the
next ordinary ``git commit`` would undo the landing. When the target has gone on meanwhile (a
person's commit, another landing), the next merge brings the work tree up, path by path, for
the paths the move changed and only where they are still as the move found them; a path a
person changed since stops the merge with :class:`WorkTreeBehindError`, nothing touched, and the
landing is not recorded until the work tree agrees.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import final

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.state import Integration
from pipeline.events import (
    Instant,
    IntegrationFailed,
    PipelineEvent,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.handlers.integration._refs import LOCAL_REFS, TargetRefs
from pipeline.handlers.runtime import (
    GitError,
    GitPolicy,
    drop_scratch,
    git_out,
    holds,
    revision,
    run_git,
    run_git_bytes,
    worktree_entries,
)

__all__ = ["WorkTreeBehindError", "move_target"]


class WorkTreeBehindError(PipelineError):
    """The target moved, but the work tree that has it checked out cannot be brought up
    without undoing a person's changes there: the message names the files and what to do;
    the landing stays under way until the next merge finds the work tree agreeing."""


@final
@frozen(kw_only=True)
class _Move:
    """Move ``target`` from ``old`` to ``new``, then ``branch`` from ``tip`` to ``new``."""

    target: str
    old: str
    new: str
    branch: str
    tip: str


def move_target(
    replayed: Integration,
    root: Path,
    scratch: Path,
    clock: Callable[[], Instant],
    refs: TargetRefs = LOCAL_REFS,
) -> tuple[PipelineEvent, ...]:
    """Move the target, then the run's branch, to the replayed head (``replayed.head``, made
    onto ``.onto`` from ``.tip``), each with the work tree that has it checked out, and each
    by ``refs``' compare-and-swap."""
    old, new, tip = replayed.onto, replayed.head, replayed.tip
    assert old is not None  # the reducer records all three with the replay
    assert new is not None
    assert tip is not None
    move = _Move(target=replayed.target, old=old, new=new, branch=replayed.branch, tip=tip)
    ref = f"refs/heads/{move.target}"
    found = revision(root, ref)
    beyond = found is not None and found not in (move.old, move.new)
    if beyond and found is not None and holds(root, found, move.new):
        # Our move was made (the process died before its fact), and someone built on it: the
        # work tree may still be where the move found it.
        holder = _checked_out(root, ref)
        if holder is not None:
            _bring_up(holder, move, found)
        return _landed(move, root, scratch, clock, refs)
    if found not in (move.old, move.new):
        return (TargetMoved(expected=move.old, found=found or "(no branch)", at=clock()),)
    holder = _checked_out(root, ref)
    if found == move.old:
        if not holds(root, move.new, move.old):
            # Never a move that would drop what the target holds: a fast-forward only.
            reason = f"{move.new[:12]} does not hold {move.target}'s {move.old[:12]}"
            return (IntegrationFailed(reason=reason, at=clock()),)
        if holder is not None:
            stale = _would_not_follow(holder, move.old, move.new)
            if stale:
                reason = (
                    f"{holder} has changes in files the merge brings ({stale}): commit or "
                    "stash them, then merge again"
                )
                return (IntegrationFailed(reason=reason, at=clock()),)
        message = f"ralph: land {move.branch}"
        if not refs.swap(root, ref, move.new, move.old, message):
            now = revision(root, ref)
            if now != move.new:
                return (TargetMoved(expected=move.old, found=now or "(no branch)", at=clock()),)
    if holder is not None:
        try:
            git_out(holder, "read-tree", "-m", "-u", move.old, move.new)
        except GitError as error:
            # The work tree cannot follow: the target goes back, so nobody commits the old
            # files over the new commit. Only when nobody built on it meanwhile.
            if not refs.swap(root, ref, move.old, move.new, "ralph: undo the landing"):
                raise
            reason = f"{holder} could not follow {move.target} ({error}); it is back where it was"
            return (IntegrationFailed(reason=reason, at=clock()),)
    return _landed(move, root, scratch, clock, refs)


def _landed(
    move: _Move, root: Path, scratch: Path, clock: Callable[[], Instant], refs: TargetRefs
) -> tuple[PipelineEvent, ...]:
    """The target is at the replayed head: the run's branch follows, the scratch goes."""
    _follow(refs, root, f"refs/heads/{move.branch}", move.tip, move.new)
    drop_scratch(root, scratch)
    return (TargetAdvanced(target=move.target, old=move.old, new=move.new, at=clock()),)


def _follow(refs: TargetRefs, root: Path, ref: str, tip: str, new: str) -> None:
    """Move the run's branch from ``tip`` to ``new`` (compare-and-swap) with its worktree; a
    branch that moved elsewhere meanwhile, or whose worktree cannot follow, stays (its
    commits are on the target; only ``ralph worktrees clean`` needs ``--force`` then)."""
    if tip == new:
        return
    if revision(root, ref) == tip and not refs.swap(root, ref, new, tip, "ralph: landed"):
        return
    if revision(root, ref) != new:
        return
    holder = _checked_out(root, ref)
    if holder is None:
        return
    try:
        git_out(holder, "read-tree", "-m", "-u", tip, new)
    except GitError:
        refs.swap(root, ref, tip, new, "ralph: the worktree could not follow")


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
    found = (entry["worktree"] for entry in worktree_entries(root) if entry.get("branch") == ref)
    return next((Path(folder) for folder in found), None)


Entry = tuple[str, str]
"""A path's mode and object id, in a tree or the index."""


def _bring_up(holder: Path, move: _Move, head: str) -> None:
    """Bring the work tree at ``holder`` up to ``head`` (its branch, the target, which holds
    the move to ``move.new``) for the paths the move changed that are still as the move
    found them (index at ``move.old``, file as the index has it): the two-tree read a kill
    left undone, path by path. A path changed otherwise (staged, edited, an untracked file
    where the move adds one, unmerged) raises :class:`WorkTreeBehindError`, nothing touched."""
    changed = _listed(holder, "diff-tree", "-r", "--name-only", "-z", "--no-renames",
                      move.old, move.new)  # fmt: skip
    if not changed:
        return
    was, now = _tree(holder, move.old), _tree(holder, head)
    staged, unmerged = _index(holder)
    edited = set(_listed(holder, "diff", "--name-only", "-z", "--no-renames"))
    behind: list[str] = []
    own: list[str] = []
    for path in changed:
        entry = staged.get(path)
        if path not in unmerged and entry == now.get(path):
            continue  # up already (the read ran, or a person brought it up)
        untouched = path not in unmerged and path not in edited and entry == was.get(path)
        if untouched and entry is None and os.path.lexists(holder / path):
            untouched = False  # a file of the person's where the move adds one
        (behind if untouched else own).append(path)
    if own:
        shown = ", ".join(own[:5]) + (f" and {len(own) - 5} more" if len(own) > 5 else "")
        raise WorkTreeBehindError(
            f"{move.branch} landed on {move.target}, but {holder} has changes of its own "
            f"in files the landing changed ({shown}) and its index is still where the landing "
            f"found it, so a commit there would undo the landing: keep what you need of those "
            f"files elsewhere, bring them to {move.target}'s head (git checkout "
            f"{move.target} -- FILES), then run ralph worktrees merge again"
        )
    present = [path for path in behind if path in now]
    gone = [path for path in behind if path not in now]
    if present:
        _with_paths(holder, present, "checkout", head)
    if gone:
        _with_paths(holder, gone, "rm", "--quiet", "--force")


def _listed(holder: Path, *args: str) -> list[str]:
    """The NUL-separated paths a git command in ``holder`` prints."""
    done = run_git_bytes(holder, *args, policy=GitPolicy())
    return [os.fsdecode(path) for path in done.stdout.split(b"\0") if path]


def _records(holder: Path, *args: str) -> Iterator[tuple[list[str], str]]:
    """Each ``INFO<tab>PATH`` record of a NUL-separated git listing in ``holder``: the words of
    its INFO, and its path."""
    done = run_git_bytes(holder, *args, policy=GitPolicy())
    for line in done.stdout.split(b"\0"):
        if b"\t" in line:
            info, path = line.split(b"\t", 1)
            yield info.decode().split(), os.fsdecode(path)


def _tree(holder: Path, commit: str) -> dict[str, Entry]:
    """Every path of ``commit``'s tree with its entry."""
    listed = _records(holder, "ls-tree", "-r", "-z", "--full-tree", commit)
    return {path: (mode, sha) for (mode, _kind, sha), path in listed}


def _index(holder: Path) -> tuple[dict[str, Entry], set[str]]:
    """The index of the work tree at ``holder``: each merged path's entry, and the paths
    left unmerged."""
    staged: dict[str, Entry] = {}
    unmerged: set[str] = set()
    for (mode, sha, stage), path in _records(holder, "ls-files", "--stage", "-z"):
        if stage == "0":
            staged[path] = (mode, sha)
        else:
            unmerged.add(path)
    return staged, unmerged


def _with_paths(holder: Path, paths: list[str], command: str, *args: str) -> None:
    """``git COMMAND ARGS`` in ``holder`` on exactly ``paths`` (given on its standard input,
    taken literally)."""
    listed = b"\0".join(os.fsencode(f":(literal){path}") for path in paths)
    run_git_bytes(
        holder, command, "--pathspec-from-file=-", "--pathspec-file-nul", *args,
        policy=GitPolicy(), input_bytes=listed,
    )  # fmt: skip
