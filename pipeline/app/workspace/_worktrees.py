"""Runs in git worktrees of their own (I/O: git, files and stores): ``ralph run --worktree``
makes one per run, on a branch of its own, so that many runs of one repository go on at once,
each with its own log in its worktree's own store; ``ralph worktrees`` lists them with their
runs, shows what a branch changed, and removes what was merged.

A run's worktree is ``<workspace>-worktrees/<name>`` beside the workspace, on the branch
``ralph/run-<name>``, made from the workspace's HEAD; it gets what the workspace has that the
commit lacks (``carry_setup``). Forks (``ralph/fork-<run>``) are listed with them. They are
measured against the HEAD of the repository's main worktree (the commands refuse to run from
another). A worktree is never removed while a run holds it (``lock_mode``: looking takes no
lock), and without ``force`` only when HEAD holds its branch's commits and its run
has ended (a fork or a stopped run could still be resumed).

ralph's worktrees (a run's, a ticket's, a fork's) are made by ``git worktree add --lock``: the
entry stays locked, with ralph's own reason (:data:`MAKING`), through the checkout and through
everything ralph then puts in (the carried files, a fork's log), and :func:`filling` unlocks it
as the last step. So an entry of ralph's that is still locked with that reason, or with git's
own ``initializing`` (the lock git holds through a plain ``worktree add``, left by a kill in
its checkout), is half-made: a partial checkout, an ``index.lock`` left, nothing carried. It is
never used; :func:`_clear` removes it (``git worktree remove -f -f``, which takes a locked entry
and a missing folder alike) and the caller makes it anew. The lock is in the worktree's own git
folder (``.git/worktrees/<id>/locked``), out of an agent's reach.

Makers and removers of a repository take turns on ``ralph-worktrees.lock`` in its git folder
(:func:`making`, an ``flock`` the kernel drops with its holder however it dies): a worktree
being made is locked by a live maker, so whoever holds the turn knows every half-made one it
sees is dead.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from attrs import frozen

from pipeline import PipelineError
from pipeline.app.workspace._carry import carry_setup
from pipeline.app.workspace._lock import flocked, lock_mode
from pipeline.core.state import Phase
from pipeline.handlers.runtime import (
    GitError,
    GitPolicy,
    WorkspaceLayout,
    git_out,
    new_run_id,
    revision,
    run_git,
    run_git_bytes,
    worktree_entries,
)
from pipeline.handlers.store import open_store_at

if TYPE_CHECKING:  # the engine is not loaded to list or make worktrees
    from pipeline.engine import Interruption

__all__ = [
    "FORK_BRANCH_PREFIX",
    "RUN_BRANCH_PREFIX",
    "HalfMadeError",
    "RunWorktree",
    "WorktreeError",
    "common_git_dir",
    "drop_worktree",
    "filling",
    "find_worktree",
    "git_folder_lock",
    "main_worktree",
    "making",
    "new_worktree",
    "remove_worktree",
    "run_worktrees",
    "ticket_worktree",
    "worktree_diff",
]

RUN_BRANCH_PREFIX: Final = "ralph/run-"
"""The branches ``ralph run --worktree`` makes."""

FORK_BRANCH_PREFIX: Final = "ralph/fork-"
"""The branches ``ralph fork`` makes."""

_LISTED: Final = (f"refs/heads/{RUN_BRANCH_PREFIX}", f"refs/heads/{FORK_BRANCH_PREFIX}")

MAKING: Final = "ralph is making it"
"""The reason ralph's worktrees are locked with until they are whole."""

_GIT_MAKING: Final = "initializing"
"""The reason git locks a worktree with through a plain ``git worktree add`` (what an older
ralph, killed in one, left)."""

_LOCK_NAME: Final = "ralph-worktrees.lock"
"""The makers' and removers' turn (:func:`making`), in the repository's common git folder."""


class WorktreeError(PipelineError, ValueError):
    """A worktree cannot be made, found or removed; the message says why, and nothing was
    changed."""


_git = functools.partial(git_out, error=WorktreeError)
"""ralph's own git in a root (no hooks, filters or fsmonitor); a failure is a ``WorktreeError``."""


class HalfMadeError(WorktreeError):
    """A worktree whose making was cut short could not be removed (so it cannot be made
    anew); it is never used, and trying again later may remove it."""


@final
@frozen(kw_only=True)
class RunWorktree:
    """A worktree of ralph's: where it is, its branch and head, and against the workspace's
    HEAD: the commits it has that HEAD lacks, and whether HEAD holds all of them (merged);
    its latest run and how that run stands (None: no run yet) and whether it has ended, where
    its landing through the merge queue stands (None: never queued), and whether a run holds
    it."""

    name: str
    path: Path
    branch: str
    head: str
    ahead: int
    run: str | None
    phase: str | None
    ended: bool
    busy: bool
    landing: str | None = None
    half_made: bool = False
    """Its making was cut short (a partial checkout, nothing carried): nothing ever ran in it,
    and it is never used; ``ralph worktrees clean`` removes it."""

    @property
    def merged(self) -> bool:
        """Whether the workspace's HEAD holds every commit of its branch."""
        return self.ahead == 0

    @property
    def removable(self) -> bool:
        """Whether it goes without ``force``: merged, its run ended, no run at work in it (a
        half-made one: merged)."""
        return self.merged and self.ended and not self.busy


def ticket_worktree(root: Path, ticket: str) -> Path:
    """The worktree a queue worker runs ticket ``ticket`` of workspace ``root`` in (``[run]
    worktree = true`` submitted): made at the first claim, found again at a takeover, so the
    run resumes where it stopped. The ticket carries the configuration and the prompt.

    A worktree whose making was cut short (a worker killed in its checkout) is never used: it
    is removed and made anew on the ticket's branch, which is kept as it is."""
    root = root.resolve()
    target = _folder(root, ticket)
    branch = f"{RUN_BRANCH_PREFIX}{ticket}"
    with making(root):
        entry = _entry(root, target)
        if entry is not None and not entry.half_made:
            if entry.branch == f"refs/heads/{branch}":
                return target
            raise WorktreeError(f"{target} is not the worktree of ticket {ticket} ({entry.branch})")
        if entry is not None:
            _clear(root, target, None)  # the branch has no commit of a run: nothing ran there
        return _make(root, name=ticket, setup=False)[1]


def new_worktree(
    root: Path, *, name: str | None = None, setup: bool = True
) -> tuple[str, Path, str]:
    """A new worktree for a run of workspace ``root``, at its HEAD, with what a run needs
    carried over (``setup``: refused when ``ralph.toml`` or the prompt has changes HEAD
    lacks, which the run would miss). Returns its name (``name``, or a new one), its folder
    and its branch."""
    root = root.resolve()
    with making(root):
        return _make(root, name=name, setup=setup)


def _make(root: Path, *, name: str | None, setup: bool) -> tuple[str, Path, str]:
    """:func:`new_worktree` in this process's turn (:func:`making`); a branch of the name that
    exists (a making cut short after git made it) is checked out as it is."""
    if _git(root, "rev-parse", "--show-prefix").strip():
        raise WorktreeError(f"{root} is a folder inside its repository: run from its top")
    if revision(root, "HEAD") is None:
        raise WorktreeError(f"{root} has no commit yet: a worktree starts from one")
    # The worktree starts from HEAD: an edited ralph.toml or prompt would not go with it.
    changed = _git(root, "status", "--porcelain", "--untracked-files=no", "--", *_SETUP)
    if setup and changed.strip():
        raise WorktreeError(
            f"{', '.join(_SETUP)} in {root}: changes HEAD lacks; a worktree starts from HEAD, "
            "so commit them first"
        )
    name = name or new_run_id(datetime.now(UTC))
    target = _folder(root, name)
    branch = f"{RUN_BRANCH_PREFIX}{name}"
    start = None if revision(root, f"refs/heads/{branch}") else "HEAD"
    target.parent.mkdir(parents=True, exist_ok=True)
    with filling(root, target, branch, start, what="the worktree", error=WorktreeError):
        carry_setup(root, target)
    return name, target, branch


def run_worktrees(root: Path) -> list[RunWorktree]:
    """ralph's worktrees of workspace ``root`` (runs' and forks'), oldest first; ``root``
    must be the repository's main worktree, whose HEAD they are measured against."""
    root = main_worktree(root)
    found = []
    listed = _listed(root)
    # What looks half-made while a maker is at work may be its worktree: busy, never removed.
    making_now = any(entry.half_made for entry, _ in listed) and maker_at_work(root)
    for entry, branch in listed:
        path, half_made = entry.path, entry.half_made
        head = entry.head.strip("0") and entry.head  # 40 zeros: git had not set it yet
        counted = (
            _git(root, "rev-list", "--count", f"HEAD..{head}", check=not half_made) if head else ""
        )
        made = "being made" if making_now else "half-made"
        run, phase, ended, landing = (None, made, True, None) if half_made else _latest_run(path)
        found.append(
            RunWorktree(
                name=branch.split("/", 1)[1].split("-", 1)[1],  # ralph/run-NAME: NAME
                path=path,
                branch=branch,
                head=head,
                ahead=int(counted.strip() or 0),
                run=run,
                phase=phase,
                ended=ended,
                busy=making_now if half_made else _busy(path),
                landing=landing,
                half_made=half_made,
            )
        )
    return found


def find_worktree(root: Path, name: str) -> RunWorktree:
    """The worktree ``name`` names: its name, its branch or its folder."""
    for worktree in run_worktrees(root):
        if (
            name in (worktree.name, worktree.branch)
            or Path(name).expanduser().resolve() == worktree.path
        ):
            return worktree
    raise WorktreeError(f"no worktree of ralph's named {name!r} here (ralph worktrees list)")


def worktree_diff(root: Path, worktree: RunWorktree) -> str:
    """What the worktree's branch changed since it left the workspace's HEAD (``git diff
    HEAD...BRANCH``: the changes a merge would bring), bytes that are no UTF-8 replaced; no
    external diff program or textconv filter of the repository's runs."""
    args = ("diff", f"HEAD...{worktree.head}")  # run_git: no external diff or textconv
    try:
        done = run_git_bytes(main_worktree(root), *args, policy=GitPolicy())
    except GitError as error:
        raise WorktreeError(f"git diff failed: {error}") from error
    return done.stdout.decode("utf-8", "replace")


def remove_worktree(root: Path, worktree: RunWorktree, *, force: bool = False) -> None:
    """Remove the worktree and its branch: refused while a run holds it, and, unless
    ``force``, when its branch has commits the workspace's HEAD lacks or its folder holds
    changes no commit has, or its run has not ended."""
    root = main_worktree(root)
    if worktree.half_made and not worktree.busy:
        with making(root):
            entry = _entry(root, worktree.path)
            if entry is not None and not entry.half_made:
                raise WorktreeError(
                    f"{worktree.path} was being made, and is whole now: look again "
                    "(ralph worktrees list)"
                )
            if not force and not worktree.merged:
                raise WorktreeError(
                    f"{worktree.branch} (half-made) has {worktree.ahead} commit(s) HEAD "
                    "lacks: remove it with --force (they are lost)"
                )
            _clear(root, worktree.path, worktree.branch)
            return
    if worktree.half_made:
        raise WorktreeError(f"{worktree.path} is being made: try again once it is made")
    if worktree.busy or _busy(worktree.path):
        raise WorktreeError(f"a run is at work in {worktree.path}: stop it first")
    if not force and not worktree.merged:
        raise WorktreeError(
            f"{worktree.branch} has {worktree.ahead} commit(s) HEAD lacks: merge them, or "
            "remove it with --force (they are lost)"
        )
    if not force and worktree.run is not None and not worktree.ended:
        raise WorktreeError(
            f"run {worktree.run} in {worktree.path} has not ended ({worktree.phase}): "
            f"go on with ralph resume -C {worktree.path}, or remove it with --force (its "
            "log goes with it)"
        )
    entry = _entry(root, worktree.path)
    if entry is not None and entry.locked is not None:
        # Not ralph's mark (that is half-made, above): someone locked it on purpose.
        raise WorktreeError(
            f"{worktree.path} is locked ({entry.locked or 'no reason given'}): unlock it "
            f"with git worktree unlock {worktree.path} if it may go"
        )
    args = ["worktree", "remove", *(["--force"] if force else []), str(worktree.path)]
    try:
        run_git(root, *args, policy=GitPolicy())
    except GitError as error:
        why = "" if force else " (changes no commit has? --force removes them)"
        raise WorktreeError(f"git would not remove {worktree.path}{why}: {error}") from error
    _git(root, "branch", "-D", worktree.branch)


def _folder(root: Path, name: str) -> Path:
    """Where worktree ``name`` of workspace ``root`` lives."""
    return root.parent / f"{root.name}-worktrees" / name


_SETUP: Final = ("ralph.toml", "PROMPT.md")
"""The files a worktree's run reads first, which must be as HEAD has them (or untracked)."""


def main_worktree(root: Path) -> Path:
    """``root``, which must be the top of its repository's main worktree."""
    root = root.resolve()
    dirs = _git(root, "rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir")
    own, common = dirs.splitlines()
    if Path(own).resolve() != Path(common).resolve():
        main = Path(common).resolve().parent
        raise WorktreeError(f"{root} is a linked worktree: run this from {main}")
    return root


def _listed(root: Path) -> list[tuple[Registered, str]]:
    """Each of ralph's worktrees, as git lists it, with its branch: one on a branch of
    ralph's, or one half-made by ralph before git set its branch (named in the lock's
    reason)."""
    found = []
    for entry in _registered(root):
        ref = entry.branch or ""
        if not ref.startswith(_LISTED) and entry.half_made and entry.locked:
            # "ralph is making it (ralph/run-NAME); ...": the branch it was being made on
            ref = "refs/heads/" + entry.locked.removeprefix(f"{MAKING} (").partition(")")[0]
        if ref.startswith(_LISTED):
            found.append((entry, ref.removeprefix("refs/heads/")))
    return found


def _entry(root: Path, target: Path) -> Registered | None:
    """The worktree git has registered at ``target``, if any."""
    return next((e for e in _registered(root) if e.path.resolve() == target.resolve()), None)


def _latest_run(path: Path) -> tuple[str | None, str | None, bool, str | None]:
    """The latest run in the worktree's own store, how it stands, whether it has ended, and
    where its landing stands (None, None, True, None: no run there)."""
    store = WorkspaceLayout(root=path).store
    if not store.is_file():
        return None, None, True, None
    from pipeline.engine import load_state

    try:
        with open_store_at(str(store), must_exist=True, read_only=True) as opened:
            summaries = opened.runs()
            if not summaries:
                return None, None, True, None
            run_id = summaries[-1].run_id
            state, _ = load_state(opened, run_id)
    except (OSError, PipelineError):
        return None, "unreadable store", False, None
    stands = state.termination.value if state.termination else state.phase.value
    landing = None if state.integration is None else state.integration.status.value
    return run_id, stands, state.phase is Phase.COMPLETE, landing


def _busy(path: Path) -> bool:
    """Whether a run holds the worktree now (``lock_mode``; when that cannot tell, as good as
    busy, so nothing is removed under a run)."""
    try:
        return lock_mode(WorkspaceLayout(root=path).ralph_dir) is not None
    except OSError:
        return True


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


def _registered(root: Path) -> list[Registered]:
    """Every worktree of ``root``'s repository, as ``git worktree list --porcelain -z`` gives
    them (``-z``: a folder's name may hold a line break)."""
    try:
        listed = worktree_entries(root)
    except GitError as error:
        raise WorktreeError(f"git worktree list failed: {error}") from error
    return [
        Registered(
            path=Path(entry["worktree"]),
            head=entry.get("HEAD", ""),
            branch=entry.get("branch"),
            locked=entry.get("locked"),
        )
        for entry in listed
    ]


@contextlib.contextmanager
def making(root: Path) -> Iterator[None]:
    """This process's turn to make or remove worktrees of ``root``'s repository: waits for the
    one at it (a checkout takes seconds at most); a failure is a :class:`WorktreeError`."""
    try:
        with git_folder_lock(root, _LOCK_NAME):
            yield
    except (GitError, OSError) as error:
        raise WorktreeError(f"cannot take the turn to make worktrees of {root}: {error}") from error


@contextlib.contextmanager
def git_folder_lock(
    root: Path, name: str, interruption: Interruption | None = None
) -> Iterator[None]:
    """Hold the ``flock`` on ``name`` in the common git folder of ``root``'s repository for
    the block (:func:`flocked`: a link planted there is refused, never followed), waiting
    for its holder; a request to ``interruption`` while it waits raises :class:`Interrupted`.
    Raises :class:`GitError` when there is no git folder."""
    with contextlib.ExitStack() as held:
        with contextlib.nullcontext() if interruption is None else interruption.armed():
            held.enter_context(flocked(common_git_dir(root) / name))
        yield


def maker_at_work(root: Path) -> bool:
    """Whether another process has the turn (:func:`making`) now: what looks half-made may be
    being made; when that cannot be told, as good as at work (nothing is removed under a
    maker). Takes no turn that lasts (a maker that comes meanwhile waits a moment)."""
    try:
        with flocked(common_git_dir(root) / _LOCK_NAME, wait=False):
            return False
    except (GitError, OSError):  # held (BlockingIOError), or it cannot be told
        return True


def common_git_dir(root: Path) -> Path:
    """The git folder all worktrees of ``root``'s repository share (where their makers and
    integrators meet). Raises :class:`GitError`."""
    return Path(git_out(root, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())


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
    """The making of one of ralph's worktrees whole: ``git worktree add`` of ``target`` on
    ``branch``, made at ``start`` (None: the branch exists, and is checked out as it is),
    locked as being made; then what the caller puts in; then the unlock, its last step. What
    fails in the block or in the unlock (``OSError``, a ``PipelineError``) removes the
    worktree and its branch again (:func:`drop_worktree`) and is raised as ``error`` naming
    ``what`` was made, as is a failed ``git worktree add``."""
    made = ["-b", branch, str(target), start] if start is not None else [str(target), branch]
    reason = f"{MAKING} ({branch}); a crash left it half-made: ralph removes it"
    try:
        run_git(root, "worktree", "add", "--quiet", "--lock", "--reason", reason, *made)
    except GitError as failure:
        raise error(f"git worktree add failed: {failure}") from failure
    try:
        yield
        # Whole: till now a crash left it half-made, as ralph sees.
        run_git(root, "worktree", "unlock", str(target))
    except (OSError, PipelineError) as failure:
        drop_worktree(root, target, branch)
        raise error(f"{what} could not be made, and nothing of it is left: {failure}") from failure


def drop_worktree(root: Path, target: Path, branch: str) -> None:
    """Remove a worktree just made, and its branch, after its making failed half-way (what
    fails here leaves nothing worse: the worktree was never used, and is still locked as
    half-made until it is gone)."""
    with contextlib.suppress(WorktreeError):
        _clear(root, target, branch)


def _clear(root: Path, target: Path, branch: str | None) -> None:
    """Remove the half-made worktree ``target`` (locked or not, its folder there or not) and,
    when given, its ``branch``; each step can be cut short and done again. Raises
    :class:`HalfMadeError` when git keeps it."""
    try:
        gone = run_git(root, "worktree", "remove", "-f", "-f", str(target), check=False)
        if gone.returncode != 0 and target.exists():
            # git refuses a folder it cannot read as a worktree (its .git file not yet
            # written): the folder goes, then its entry (now missing) with the lock taken off.
            shutil.rmtree(target, ignore_errors=True)
            run_git(root, "worktree", "unlock", str(target), check=False)
            run_git(root, "worktree", "prune")
        if any(entry.path == target for entry in _registered(root)):
            raise GitError(f"git worktree remove {target}: git keeps it ({gone.stderr.strip()})")
    except GitError as error:
        raise HalfMadeError(
            f"the half-made worktree {target} cannot be removed: {error}"
        ) from error
    if branch is not None:
        run_git(root, "branch", "-D", branch, check=False)
