"""The git handlers: commit the agents' work, rebase onto a branch, abort a conflict (I/O).

Everything goes through the ``git`` command line in the workspace, with argv lists. A commit
carries an ``Ralph-Effect: <effect id>`` trailer, so that a commit asked for again after a crash
(``CreateCommit.may_exist``) is found instead of made twice, and ``Ralph-Model`` and
``Ralph-Cost`` trailers: the models of the invocations since the last commit and their known
cost, as the effect carries them from the state. Failures of git itself are reported as
``WorkspaceIoError(GIT)``; a rebase conflict is a fact of its own.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from attrs import frozen

from pipeline.effects import AbortRebase, CreateCommit, Rebase
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
from pipeline.views import cost_text, models_text

__all__ = [
    "COST_TRAILER",
    "EFFECT_TRAILER",
    "MODEL_TRAILER",
    "GitError",
    "GitHandler",
    "commit_trailers",
    "ensure_excluded",
    "switch_branch",
]

EFFECT_TRAILER = "Ralph-Effect"
"""The commit trailer naming the effect a commit was made for."""

MODEL_TRAILER = "Ralph-Model"
"""The commit trailer naming the models of the invocations since the last commit."""

COST_TRAILER = "Ralph-Cost"
"""The commit trailer giving the known cost of the invocations since the last commit."""

_TIMEOUT_S = 600

_AGENT_DROPPINGS = (":(exclude,glob).aider*",)
"""Files agent CLIs leave in the work tree about themselves (aider's chat and input history,
its tags cache): never the agent's work."""


class GitError(Exception):
    """A git command failed; the message holds the command and what git said."""


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise GitError(f"git {' '.join(args)}: {error}") from error
    if check and done.returncode != 0:
        raise GitError(f"git {' '.join(args)} failed: {_said(done)}")
    return done


def _said(done: subprocess.CompletedProcess[str]) -> str:
    """What git printed, on one line (its first line usually names the cause)."""
    text = " ".join((done.stderr or done.stdout).split())
    return text[:500] if text else f"exit status {done.returncode}"


def ensure_excluded(root: Path, patterns: tuple[str, ...] = ("/.ralph/", "/.agent/")) -> None:
    """Keep ralph's own folders out of commits, through the repository's ``info/exclude``
    (the user's ``.gitignore`` is left alone). Raises :class:`GitError` outside a repository."""
    git_dir = Path(_git(root, "rev-parse", "--git-common-dir").stdout.strip())
    exclude = (root / git_dir if not git_dir.is_absolute() else git_dir) / "info" / "exclude"
    present = exclude.read_text("utf-8").splitlines() if exclude.is_file() else []
    missing = [p for p in patterns if p not in present]
    if missing:
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a", encoding="utf-8") as handle:
            if present and present[-1].strip():
                handle.write("\n")
            handle.write("# ralph-pipeline's own files\n" + "\n".join(missing) + "\n")


def switch_branch(root: Path, branch: str) -> None:
    """Work on ``branch``: switch to it, creating it at the current commit when missing.
    Uncommitted changes come along; raises :class:`GitError` when git refuses."""
    current = _git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    if current == branch:
        return
    exists = _git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}", check=False)
    if exists.returncode == 0:
        _git(root, "switch", "--quiet", branch)
    else:
        _git(root, "switch", "--quiet", "--create", branch)


def commit_trailers(effect: CreateCommit) -> str:
    """The trailer block of ``effect``'s commit: its effect id, models and cost."""
    return "\n".join(
        (
            f"{EFFECT_TRAILER}: {effect.effect_id}",
            f"{MODEL_TRAILER}: {models_text(effect.models)}",
            f"{COST_TRAILER}: {cost_text(effect.spent)}",
        )
    )


@frozen
class GitHandler:
    """Commits and rebases in the repository at ``root``."""

    root: Path
    clock: Callable[[], Instant]
    keep_out: tuple[str, ...] = ()
    """Paths (relative to ``root``) never staged: ralph's own files (its config, the user's
    prompt, a store kept inside the repository) whatever the agent did to them."""

    def commit(self, effect: CreateCommit) -> tuple[PipelineEvent, ...]:
        """Commit every change in the working tree but ralph's own files (skip when there is
        none)."""
        try:
            return self._commit(effect)
        except GitError as error:
            return (WorkspaceIoError(WorkspaceErrorKind.GIT, ".", str(error), self.clock()),)

    def _commit(self, effect: CreateCommit) -> tuple[PipelineEvent, ...]:
        trailer = f"{EFFECT_TRAILER}: {effect.effect_id}"
        if effect.may_exist:
            found = _git(
                self.root, "log", "-1", "--format=%H", "--fixed-strings", f"--grep={trailer}"
            ).stdout.strip()
            if found:
                return (CommitCreated(found, self._branch(), self.clock()),)
        excluded = [f":(exclude,literal){path}" for path in self._not_ignored(self.keep_out)]
        _git(self.root, "add", "--all", "--", ".", *excluded, *_AGENT_DROPPINGS)
        if _git(self.root, "diff", "--cached", "--quiet", check=False).returncode == 0:
            return (CommitSkipped("nothing changed", self.clock()),)
        trailers = commit_trailers(effect)
        _git(self.root, "commit", "--quiet", "--no-verify", "-m", effect.message, "-m", trailers)
        # One git process answers both: the commit's sha and the branch it is on.
        sha, branch = _git(self.root, "rev-parse", "HEAD", "--abbrev-ref", "HEAD").stdout.split()
        return (CommitCreated(sha, branch, self.clock()),)

    def _not_ignored(self, paths: tuple[str, ...]) -> list[str]:
        """``paths`` but those git ignores anyway (naming an ignored path makes ``add`` fail)."""
        if not paths:
            return []
        try:
            done = subprocess.run(
                ["git", "check-ignore", "--stdin", "-z"],
                cwd=self.root,
                input="\0".join(paths) + "\0",
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            raise GitError(f"git check-ignore: {error}") from error
        ignored = set(done.stdout.split("\0"))
        return [path for path in paths if path not in ignored]

    def _branch(self) -> str:
        return _git(self.root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()

    def rebase(self, effect: Rebase) -> tuple[PipelineEvent, ...]:
        """Rebase the current branch onto ``effect.onto``; a conflict is left for the reducer."""
        started = RebaseStarted(effect.onto, self.clock())
        try:
            done = _git(self.root, "rebase", effect.onto, check=False)
            if done.returncode == 0:
                head = _git(self.root, "rev-parse", "HEAD").stdout.strip()
                return (started, RebaseSucceeded(head, self.clock()))
            conflicted = _git(self.root, "diff", "--name-only", "--diff-filter=U").stdout.split()
            if not conflicted and not self._rebasing():
                message = f"git rebase {effect.onto} failed: {_said(done)}"
                return (
                    started,
                    WorkspaceIoError(WorkspaceErrorKind.GIT, ".", message, self.clock()),
                )
            return (started, RebaseConflicted(tuple(conflicted), self.clock()))
        except GitError as error:
            return (
                started,
                WorkspaceIoError(WorkspaceErrorKind.GIT, ".", str(error), self.clock()),
            )

    def _rebasing(self) -> bool:
        for name in ("rebase-merge", "rebase-apply"):
            path = _git(self.root, "rev-parse", "--git-path", name).stdout.strip()
            if (self.root / path).exists():
                return True
        return False

    def abort(self, effect: AbortRebase) -> tuple[PipelineEvent, ...]:
        """Abort the rebase in progress (a no-op when none is)."""
        try:
            if self._rebasing():
                _git(self.root, "rebase", "--abort")
        except GitError as error:
            return (WorkspaceIoError(WorkspaceErrorKind.GIT, ".", str(error), self.clock()),)
        return (RebaseAborted(self.clock()),)
