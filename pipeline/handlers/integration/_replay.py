"""Replaying a completed run's branch onto its target (I/O: git).

The replay happens in a scratch worktree, detached, so the branch and its worktree stay as
they are whatever happens. Every commit is kept (``--reapply-cherry-picks``,
``--empty=keep``), so the commits ralph made can be counted afterwards by their
``Ralph-Effect`` trailers: a replay that lost one is refused, not landed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pipeline.effects import ReplayBranch
from pipeline.events import (
    Instant,
    IntegrationConflicted,
    IntegrationFailed,
    IntegrationRebased,
    PipelineEvent,
)
from pipeline.handlers.integration._scratch import (
    drop_scratch,
    fresh_scratch,
    git_out,
    revision,
)
from pipeline.handlers.runtime import EFFECT_TRAILER, GitPolicy, run_git, run_git_bytes

__all__ = ["replay_branch"]


def replay_branch(
    effect: ReplayBranch, root: Path, scratch: Path, policy: GitPolicy, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """Replay ``effect.branch`` onto ``effect.target``'s head in ``scratch`` and report the
    replayed head, the conflicted paths, or why it cannot be done."""
    onto = revision(root, f"refs/heads/{effect.target}")
    if onto is None:
        return (IntegrationFailed(f"there is no branch {effect.target!r}", clock()),)
    tip = revision(root, f"refs/heads/{effect.branch}")
    if tip is None:
        return (IntegrationFailed(f"the run's branch {effect.branch!r} is gone", clock()),)
    last = effect.last_commit
    if last is not None and not _holds(root, tip, last):
        reason = f"{effect.branch} no longer holds {last[:12]}, the run's last commit in its log"
        return (IntegrationFailed(reason, clock()),)
    pending = _ralph_commits(root, f"{onto}..{tip}")
    fresh_scratch(root, scratch, tip)
    signing = "--gpg-sign" if policy.sign else "--no-gpg-sign"
    args = ("rebase", signing, "--reapply-cherry-picks", "--empty=keep", "--no-autosquash")
    done = run_git(scratch, *args, "--end-of-options", onto, policy=policy, check=False)
    if done.returncode != 0:
        listed = run_git_bytes(
            scratch, "diff", "--name-only", "-z", "--diff-filter=U", policy=policy, check=False
        )
        paths = tuple(os.fsdecode(p) for p in listed.stdout.split(b"\0") if p)
        run_git(scratch, "rebase", "--abort", policy=policy, check=False)
        drop_scratch(root, scratch)
        if paths:
            return (IntegrationConflicted(onto, paths, clock()),)
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        return (IntegrationFailed(f"git rebase onto {onto[:12]} failed: {said[0]}", clock()),)
    head = git_out(scratch, "rev-parse", "HEAD").strip()
    missing = pending - _ralph_commits(root, f"{onto}..{head}")
    if missing:
        drop_scratch(root, scratch)
        shown = ", ".join(sorted(missing)[:5])
        reason = f"the replay lost {len(missing)} of ralph's commits ({EFFECT_TRAILER}: {shown})"
        return (IntegrationFailed(reason, clock()),)
    return (IntegrationRebased(onto, tip, head, clock()),)


def _holds(root: Path, tip: str, commit: str) -> bool:
    """Whether ``tip``'s history holds ``commit``, or, after a person rebased the branch
    (say, to resolve a conflict), the commit the same effect made (its trailer)."""
    policy = GitPolicy()
    done = run_git(root, "merge-base", "--is-ancestor", commit, tip, policy=policy, check=False)
    if done.returncode == 0:
        return True
    trailer = f"--format=%(trailers:key={EFFECT_TRAILER},valueonly)"
    said = run_git(root, "log", "-1", trailer, commit, "--", policy=policy, check=False)
    made_by = said.stdout.strip() if said.returncode == 0 else ""
    if not made_by:
        return False
    found = git_out(
        root, "log", "-1", "--format=%H", "--fixed-strings",
        f"--grep={EFFECT_TRAILER}: {made_by}", tip, "--",
    )  # fmt: skip
    return bool(found.strip())


def _ralph_commits(root: Path, span: str) -> set[str]:
    """The ``Ralph-Effect`` trailers of the commits in ``span``: the effects that made them."""
    listed = git_out(
        root, "log", "--no-merges", f"--format=%(trailers:key={EFFECT_TRAILER},valueonly)", span
    )
    return {line.strip() for line in listed.splitlines() if line.strip()}
