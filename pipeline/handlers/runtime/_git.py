"""The git handlers: commit the agents' work, rebase onto a branch, abort a conflict (I/O).

Everything goes through the ``git`` command line in the workspace, with argv lists. A commit
carries an ``Ralph-Effect: <effect id>`` trailer, so that a commit asked for again after a crash
(``CreateCommit.may_exist``) is found instead of made twice, and ``Ralph-Model`` and
``Ralph-Cost`` trailers: the models of the invocations since the last commit and their known
cost, as the effect carries them from the state. Failures of git itself are reported as
``WorkspaceIoError(GIT)``; a rebase conflict is a fact of its own.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cached_property, partial
from pathlib import Path
from typing import final

from attrs import frozen

from pipeline.core.agents import droppings
from pipeline.core.effects import AbortRebase, CreateCommit, Rebase
from pipeline.events import (
    CommitCreated,
    CommitSkipped,
    Instant,
    PipelineEvent,
    RebaseAborted,
    RebaseConflicted,
    RebaseStarted,
    RebaseSucceeded,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.runtime._gitcmd import (
    EFFECT_TRAILER,
    PLAIN,
    GitError,
    GitPolicy,
    effect_commits,
    gitlink_excludes,
    outside_pathspec,
    repository_drivers,
    resolved,
    run_git,
    said,
)
from pipeline.handlers.runtime._io import facts_or_io_error
from pipeline.reducers.views import cost_text, models_text

__all__ = [
    "COST_TRAILER",
    "MODEL_TRAILER",
    "OWN_FOLDERS",
    "GitCommit",
    "GitError",
    "GitHandler",
    "GitHistory",
    "GitPolicy",
    "UnsafePathError",
    "commit_trailers",
    "ensure_excluded",
    "own_pathspecs",
    "run_history",
    "switch_branch",
]

MODEL_TRAILER = "Ralph-Model"
"""The commit trailer naming the models of the invocations since the last commit."""

COST_TRAILER = "Ralph-Cost"
"""The commit trailer giving the known cost of the invocations since the last commit."""

OWN_FOLDERS = (".ralph", ".agent")
"""ralph's own folders at the top of the workspace: never in a commit."""


def own_pathspecs(keep_out: Iterable[str] = ()) -> tuple[str, ...]:
    """The pathspecs that leave ralph's own folders (:data:`OWN_FOLDERS`), the ``keep_out``
    paths (relative to the top) and agent CLIs' droppings out of a git command: what a commit
    never takes, and what the tamper screen never reads."""
    kept = (*OWN_FOLDERS, *keep_out)
    # The files agent CLIs leave about themselves (chat histories, tag caches: each CLI's
    # ``droppings``) are never the agent's work.
    left = (f":(exclude,glob){glob}" for glob in droppings())
    return (*(spec for path in kept for spec in outside_pathspec(path)), *left)


class UnsafePathError(GitError):
    """A path ralph writes in the repository is a symlink or lies outside it."""


def ensure_excluded(root: Path) -> None:
    """Keep ralph's own folders out of commits, through the repository's ``info/exclude``
    (the user's ``.gitignore`` is left alone). Raises :class:`GitError` outside a repository,
    :class:`UnsafePathError` when the file or its folder is a symlink (never written through)."""
    git_dir = Path(run_git(root, "rev-parse", "--git-common-dir").stdout.strip())
    common = root / git_dir if not git_dir.is_absolute() else git_dir
    info = common / "info"
    exclude = info / "exclude"
    for path in (info, exclude):
        if path.is_symlink():
            raise UnsafePathError(
                f"{path} is a symlink; ralph does not write through it: "
                "make it a plain file (folder) again, then start the run"
            )
    try:
        info.mkdir(parents=True, exist_ok=True)
        fd = os.open(exclude, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_APPEND, 0o644)
    except OSError as error:
        raise UnsafePathError(
            f"{exclude}: cannot open it without following a link: {error}"
        ) from error
    with os.fdopen(fd, "r+", encoding="utf-8") as handle:
        handle.seek(0)
        present = handle.read().splitlines()
        wanted = [f"/{folder}/" for folder in OWN_FOLDERS]
        missing = [p for p in wanted if p not in present]
        if missing:
            if present and present[-1].strip():
                handle.write("\n")
            handle.write("# ralph-pipeline's own files\n" + "\n".join(missing) + "\n")


def switch_branch(root: Path, branch: str, policy: GitPolicy = PLAIN) -> None:
    """Work on ``branch``: switch to it, creating it at the current commit when missing.
    Uncommitted changes come along; raises :class:`GitError` when git refuses. ``policy``:
    what of the repository's code the checkout may run (its smudge filters, its hooks)."""
    if run_git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip() == branch:
        return
    # ``--create=NAME`` and ``--end-of-options``: a name can never be read as an option.
    if resolved(root, f"refs/heads/{branch}") is not None:
        run_git(root, "switch", "--quiet", "--end-of-options", branch, policy=policy)
    else:
        run_git(root, "switch", "--quiet", f"--create={branch}", policy=policy)


def commit_trailers(effect: CreateCommit) -> str:
    """The trailer block of ``effect``'s commit: its effect id, models and cost."""
    return "\n".join(
        (
            f"{EFFECT_TRAILER}: {effect.effect_id}",
            f"{MODEL_TRAILER}: {models_text(effect.models)}",
            f"{COST_TRAILER}: {cost_text(effect.spent)}",
        )
    )


def _own(path: str, kept: tuple[str, ...]) -> bool:
    """Whether the staged ``path`` is (under) one of the ``kept`` paths."""
    return any(path == k or path.startswith(k + "/") for k in kept)


@frozen(kw_only=True)
class GitHandler:
    """Commits and rebases in the repository at ``root``."""

    root: Path
    clock: Callable[[], Instant]
    keep_out: tuple[str, ...] = ()
    """Paths (relative to ``root``) never staged: ralph's own files (its config, the user's
    prompt, a store kept inside the repository) whatever the agent did to them; ralph's own
    folders (:data:`OWN_FOLDERS`) are always kept out too."""
    policy: GitPolicy = PLAIN
    """What of the repository's own code these git commands may run (``[git]``)."""

    @cached_property
    def _policy(self) -> GitPolicy:
        """``policy`` with the repository's drivers read once per handler (it serves one
        commit or rebase): no git process."""
        if self.policy.run_filters or self.policy.drivers is not None:
            return self.policy
        return replace(self.policy, drivers=repository_drivers(self.root))

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return run_git(self.root, *args, policy=self._policy, check=check)

    def commit(self, effect: CreateCommit) -> tuple[PipelineEvent, ...]:
        """Commit every change in the working tree but ralph's own files (skip when there is
        none)."""
        return self._reported(lambda: self._commit(effect))

    def _commit(self, effect: CreateCommit) -> tuple[PipelineEvent, ...]:
        if effect.may_exist:
            found = self._made(effect.effect_id)
            if found is not None:
                return (CommitCreated(sha=found, branch=self._branch(), at=self.clock()),)
        kept = (*OWN_FOLDERS, *self.keep_out)
        gitlinks = gitlink_excludes(self._git("ls-files", "--stage", "-z").stdout)
        self._git("add", "--all", "--", ".", *own_pathspecs(self.keep_out), *gitlinks)
        staged = self._staged()
        if not staged:
            return (CommitSkipped(reason="nothing changed", at=self.clock()),)
        own = [path for path in staged if _own(path, kept)]
        if own:
            # Staged by the agent itself (``git add -f``): taken out again, then checked.
            self._git("reset", "--quiet", "--", *(f":(literal){path}" for path in own))
            staged = self._staged()
            still = [path for path in staged if _own(path, kept)]
            if still:
                raise GitError(f"ralph's own files are staged and stay so: {', '.join(still[:10])}")
            if not staged:
                return (CommitSkipped(reason="nothing changed", at=self.clock()),)
        trailers = commit_trailers(effect)
        signing = "--gpg-sign" if self.policy.sign else "--no-gpg-sign"
        self._git(
            "commit",
            "--quiet",
            "--no-verify",
            signing,
            # Whatever commit.cleanup and core.commentChar say, the trailers stay in.
            "--cleanup=whitespace",
            "-m",
            effect.message,
            "-m",
            trailers,
        )
        # One git process answers both: the commit's sha and the branch it is on.
        sha, branch = self._git("rev-parse", "HEAD", "--abbrev-ref", "HEAD").stdout.split()
        return (CommitCreated(sha=sha, branch=branch, at=self.clock()),)

    def _made(self, effect_id: str) -> str | None:
        """The newest commit on HEAD made for ``effect_id`` (its ``Ralph-Effect`` trailer is
        that id exactly: ``run:2`` is not ``run:20``), if any."""
        found = effect_commits(self._git, effect_id)
        return next((sha for sha, effect in found if effect == effect_id), None)

    def _staged(self) -> list[str]:
        """The paths staged for the next commit."""
        done = self._git("diff", "--cached", "--name-only", "--no-renames", "-z")
        return [path for path in done.stdout.split("\0") if path]

    def _branch(self) -> str:
        return self._git("rev-parse", "--abbrev-ref", "HEAD").stdout.strip()

    def rebase(self, effect: Rebase) -> tuple[PipelineEvent, ...]:
        """Rebase the current branch onto ``effect.onto``; a conflict is left for the reducer."""
        started = RebaseStarted(onto=effect.onto, at=self.clock())
        return (started, *self._reported(lambda: self._rebase(effect)))

    def _rebase(self, effect: Rebase) -> tuple[PipelineEvent, ...]:
        signing = "--gpg-sign" if self.policy.sign else "--no-gpg-sign"
        # After --end-of-options, ``onto`` is a revision whatever it looks like.
        done = self._git("rebase", signing, "--end-of-options", effect.onto, check=False)
        if done.returncode == 0:
            head = self._git("rev-parse", "HEAD").stdout.strip()
            return (RebaseSucceeded(head=head, at=self.clock()),)
        conflicted = self._git("diff", "--name-only", "--diff-filter=U").stdout.split()
        if not conflicted and not self._rebasing():
            message = f"git rebase {effect.onto} failed: {said(done)}"
            return (
                WorkspaceIoError(
                    kind=WorkspaceErrorKind.GIT, path=".", message=message, at=self.clock()
                ),
            )
        return (RebaseConflicted(paths=tuple(conflicted), at=self.clock()),)

    def _rebasing(self) -> bool:
        for name in ("rebase-merge", "rebase-apply"):
            path = self._git("rev-parse", "--git-path", name).stdout.strip()
            if (self.root / path).exists():
                return True
        return False

    def abort(self, effect: AbortRebase) -> tuple[PipelineEvent, ...]:
        """Abort the rebase in progress (a no-op when none is)."""

        def abort() -> tuple[PipelineEvent, ...]:
            if self._rebasing():
                self._git("rebase", "--abort")
            return (RebaseAborted(at=self.clock()),)

        return self._reported(abort)

    def _reported(
        self, action: Callable[[], tuple[PipelineEvent, ...]]
    ) -> tuple[PipelineEvent, ...]:
        """The facts of a git step, or the ``WorkspaceIoError`` of the git command that failed."""
        return facts_or_io_error(
            action, WorkspaceErrorKind.GIT, ".", self.clock, catching=(GitError,)
        )


@final
@frozen(kw_only=True)
class GitCommit:
    """A commit on HEAD made for one of the run's effects."""

    sha: str
    effect_id: str


@final
@frozen(kw_only=True)
class GitHistory:
    """The run's commits reachable from HEAD (newest first), HEAD itself and its branch
    (``HEAD`` when detached; ``head`` None in a repository without commits): what
    reconciliation compares with the run's log."""

    commits: tuple[GitCommit, ...]
    head: str | None
    branch: str


def run_history(root: Path, run_id: str) -> GitHistory:
    """The commits on HEAD whose ``Ralph-Effect`` names an effect of ``run_id``.

    Raises :class:`~pipeline.handlers.runtime.GitError` when git fails.
    """
    head = resolved(root, "HEAD")
    if head is None:
        branch = run_git(root, "symbolic-ref", "--short", "HEAD").stdout.strip()
        return GitHistory(commits=(), head=None, branch=branch)
    branch = run_git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    found = effect_commits(partial(run_git, root), f"{run_id}:")
    commits = tuple(GitCommit(sha=sha, effect_id=effect) for sha, effect in found)
    return GitHistory(commits=commits, head=head, branch=branch)
