"""Making a worktree of ralph's so that a crash at any step is recognised and undone (I/O: git,
files and a file lock).

ralph's worktrees (a run's, a ticket's, a fork's) are made by ``git worktree add --lock``: the
entry stays locked, with ralph's own reason (:data:`MAKING`), through the checkout and through
everything ralph then puts in (the carried files, a fork's log), and :func:`finish` unlocks it
as the last step. So an entry of ralph's that is still locked with that reason, or with git's
own ``initializing`` (the lock git holds through a plain ``worktree add``, left by a kill in
its checkout), is half-made: a partial checkout, an ``index.lock`` left, nothing carried. It is
never used; :func:`clear` removes it (``git worktree remove -f -f``, which takes a locked entry
and a missing folder alike) and the caller makes it anew. The lock is in the worktree's own git
folder (``.git/worktrees/<id>/locked``), out of an agent's reach.

Makers and removers of a repository take turns on ``ralph-worktrees.lock`` in its git folder
(:func:`making`, an ``flock`` the kernel drops with its holder however it dies): a worktree
being made is locked by a live maker, so whoever holds the turn knows every half-made one it
sees is dead.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from attrs import frozen

from pipeline import PipelineError
from pipeline.handlers.runtime import GitError, GitPolicy, git_out, run_git, worktree_entries

if TYPE_CHECKING:  # the engine is not loaded to list or make worktrees
    from pipeline.engine import Interruption

__all__ = [
    "MAKING",
    "Registered",
    "add_locked",
    "clear",
    "common_git_dir",
    "drop_worktree",
    "filling",
    "finish",
    "git_folder_lock",
    "maker_at_work",
    "making",
    "registered",
]

MAKING: Final = "ralph is making it"
"""The reason ralph's worktrees are locked with until they are whole."""

_GIT_MAKING: Final = "initializing"
"""The reason git locks a worktree with through a plain ``git worktree add`` (what an older
ralph, killed in one, left)."""

_LOCK_NAME: Final = "ralph-worktrees.lock"


@final
@frozen(kw_only=True)
class Registered:
    """One worktree as ``git worktree list`` has it: its folder, head (40 zeros before git set
    it), branch ref (None: detached, or not yet set) and the reason it is locked (None: not
    locked; "" locked without a reason)."""

    path: Path
    head: str
    branch: str | None
    locked: str | None

    @property
    def half_made(self) -> bool:
        """Whether its making was cut short (still locked as while it was made)."""
        return self.locked is not None and (
            self.locked.startswith(MAKING) or self.locked == _GIT_MAKING
        )


def registered(root: Path) -> list[Registered]:
    """Every worktree of ``root``'s repository, as ``git worktree list --porcelain -z`` gives
    them (``-z``: a folder's name may hold a line break)."""
    return [
        Registered(
            path=Path(entry["worktree"]),
            head=entry.get("HEAD", ""),
            branch=entry.get("branch"),
            locked=entry.get("locked"),
        )
        for entry in worktree_entries(root)
    ]


def making(root: Path) -> contextlib.AbstractContextManager[None]:
    """This process's turn to make or remove worktrees of ``root``'s repository: waits for the
    one at it (a checkout takes seconds at most)."""
    return git_folder_lock(root, _LOCK_NAME)


@contextlib.contextmanager
def git_folder_lock(
    root: Path, name: str, interruption: Interruption | None = None
) -> Iterator[None]:
    """Hold the ``flock`` on ``name`` in the common git folder of ``root``'s repository for
    the block (the kernel drops it with its holder, however it dies), waiting for its holder;
    a request to ``interruption`` while it waits raises :class:`Interrupted`. Raises
    :class:`GitError` when there is no git folder."""
    fd = _open_lock(root, name)
    try:
        with contextlib.nullcontext() if interruption is None else interruption.armed():
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def maker_at_work(root: Path) -> bool:
    """Whether another process has the turn (:func:`making`) now: what looks half-made may be
    being made. Takes no turn that lasts (a maker that comes meanwhile waits a moment)."""
    fd = _open_lock(root, _LOCK_NAME)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _open_lock(root: Path, name: str) -> int:
    """The lock file ``name`` in the repository's common git folder, opened."""
    return os.open(common_git_dir(root) / name, os.O_RDWR | os.O_CREAT, 0o644)


def common_git_dir(root: Path) -> Path:
    """The git folder all worktrees of ``root``'s repository share (where their makers and
    integrators meet). Raises :class:`GitError`."""
    return Path(git_out(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


def add_locked(root: Path, target: Path, branch: str, start: str | None) -> None:
    """``git worktree add`` of ``target`` on ``branch``, made at ``start`` (None: the branch
    exists, and is checked out as it is), left locked as being made until :func:`finish`.
    Raises :class:`GitError`."""
    made = ["-b", branch, str(target), start] if start is not None else [str(target), branch]
    reason = f"{MAKING} ({branch}); a crash left it half-made: ralph removes it"
    run_git(root, "worktree", "add", "--quiet", "--lock", "--reason", reason, *made,
            policy=GitPolicy())  # fmt: skip


@contextlib.contextmanager
def filling(
    root: Path,
    target: Path,
    branch: str,
    start: str | None,
    *,
    what: str,
    error: type[PipelineError],
) -> Iterator[None]:
    """:func:`add_locked`, then what the caller puts in, then :func:`finish`: the making of one
    of ralph's worktrees whole. What fails in the block or in :func:`finish` (``OSError``, a
    ``PipelineError``) removes the worktree and its branch again (:func:`drop_worktree`) and
    is raised as ``error`` naming ``what`` was made, as is a failed ``git worktree add``."""
    try:
        add_locked(root, target, branch, start)
    except GitError as failure:
        raise error(f"git worktree add failed: {failure}") from failure
    try:
        yield
        finish(root, target)  # whole: till now a crash left it half-made, as ralph sees
    except (OSError, PipelineError) as failure:
        drop_worktree(root, target, branch)
        raise error(f"{what} could not be made, and nothing of it is left: {failure}") from failure


def drop_worktree(root: Path, target: Path, branch: str) -> None:
    """Remove a worktree just made, and its branch, after its making failed half-way (what
    fails here leaves nothing worse: the worktree was never used, and is still locked as
    half-made until it is gone)."""
    with contextlib.suppress(GitError):
        clear(root, target, branch)


def finish(root: Path, target: Path) -> None:
    """Mark ``target`` whole: unlock it, the last step of its making. Raises
    :class:`GitError`."""
    run_git(root, "worktree", "unlock", str(target), policy=GitPolicy())


def clear(root: Path, target: Path, branch: str | None) -> None:
    """Remove the half-made worktree ``target`` (locked or not, its folder there or not) and,
    when given, its ``branch``; each step can be cut short and done again. Raises
    :class:`GitError` when git keeps it."""
    gone = run_git(
        root, "worktree", "remove", "-f", "-f", str(target), policy=GitPolicy(), check=False
    )
    if gone.returncode != 0 and target.exists():
        # git refuses a folder it cannot read as a worktree (its .git file not yet written):
        # the folder goes, then its entry (now missing) with the lock taken off.
        shutil.rmtree(target, ignore_errors=True)
        run_git(root, "worktree", "unlock", str(target), policy=GitPolicy(), check=False)
        run_git(root, "worktree", "prune", policy=GitPolicy())
    if any(entry.path == target for entry in registered(root)):
        raise GitError(f"git worktree remove {target}: git keeps it ({gone.stderr.strip()})")
    if branch is not None:
        run_git(root, "branch", "-D", branch, policy=GitPolicy(), check=False)
