"""What git holds of a run: its commits (found by their ``Ralph-Effect`` trailer), HEAD and
the branch (I/O). Reconciliation compares this with the run's log."""

from __future__ import annotations

from pathlib import Path
from typing import final

from attrs import frozen

from pipeline.handlers.runtime._git import EFFECT_TRAILER, _git

__all__ = ["GitCommit", "GitHistory", "run_history"]


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
    (``HEAD`` when detached; ``head`` None in a repository without commits)."""

    commits: tuple[GitCommit, ...]
    head: str | None
    branch: str


def run_history(root: Path, run_id: str) -> GitHistory:
    """The commits on HEAD whose ``Ralph-Effect`` names an effect of ``run_id``.

    Raises :class:`~pipeline.handlers.runtime.GitError` when git fails.
    """
    head_done = _git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    if head_done.returncode != 0:
        return GitHistory(
            commits=(),
            head=None,
            branch=_git(root, "symbolic-ref", "--short", "HEAD").stdout.strip(),
        )
    head = head_done.stdout.strip()
    branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD").stdout.strip()
    shown = _git(
        root,
        "log",
        "HEAD",
        "--fixed-strings",
        f"--grep={EFFECT_TRAILER}: {run_id}:",
        f"--format=%H %(trailers:key={EFFECT_TRAILER},valueonly,separator=%x20)",
    ).stdout
    commits = []
    prefix = f"{run_id}:"
    for line in shown.splitlines():
        sha, *effects = line.split()
        # The trailer as git parses it, not a message merely quoting it.
        commits += [GitCommit(sha=sha, effect_id=e) for e in effects if e.startswith(prefix)]
    return GitHistory(commits=tuple(commits), head=head, branch=branch)
