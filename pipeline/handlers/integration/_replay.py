"""Replaying a completed run's branch onto its target (I/O: git).

The replay happens in a scratch worktree, detached, so the branch and its worktree stay as
they are whatever happens. Every commit is kept (``--reapply-cherry-picks``,
``--empty=keep``), so the commits ralph made can be counted afterwards by their
``Ralph-Effect`` trailers: a replay that lost one is refused, not landed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

from pipeline.effects import ReplayBranch
from pipeline.events import (
    Instant,
    IntegrationConflicted,
    IntegrationFailed,
    IntegrationRebased,
    IntegrationResolved,
    PipelineEvent,
)
from pipeline.handlers.integration._scratch import (
    drop_scratch,
    fresh_scratch,
    git_out,
    revision,
)
from pipeline.handlers.runtime import (
    EFFECT_TRAILER,
    GitPolicy,
    own_pathspecs,
    run_git,
    run_git_bytes,
)

__all__ = ["MAX_RESOLUTIONS", "Resolve", "replay_branch"]


Resolve = Callable[[tuple[str, ...]], bool]
"""Has the resolver agent at the conflicts in these paths (in the scratch worktree); whether
it ended well (how the files stand is checked afterwards, whatever it says)."""

MAX_RESOLUTIONS: Final = 100
"""The most conflicted stops of one replay a resolver is put to (one per replayed commit at
most): a bound whatever the agent does."""

_MARKERS: Final = re.compile(rb"^(<<<<<<<|>>>>>>>)( |$)", re.MULTILINE)
"""A conflict marker git writes, at the start of a line."""


def replay_branch(
    effect: ReplayBranch,
    root: Path,
    scratch: Path,
    policy: GitPolicy,
    clock: Callable[[], Instant],
    resolve: Resolve | None = None,
) -> tuple[PipelineEvent, ...]:
    """Replay ``effect.branch`` onto ``effect.target``'s head in ``scratch`` and report the
    replayed head, the conflicted paths, or why it cannot be done; with ``effect.resolver``,
    ``resolve`` has that agent at each conflict first."""
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
    resolver = None if effect.resolver is None else resolve
    resolved: dict[str, None] = {}
    paths = _unmerged(scratch, policy)
    for _ in range(MAX_RESOLUTIONS):
        if done.returncode == 0 or not paths or resolver is None:
            break
        if not resolver(paths) or not _settled(scratch, paths, policy):
            break
        resolved.update(dict.fromkeys(paths))
        if not _rebasing(scratch, policy):
            done = run_git(scratch, "rev-parse", "HEAD", policy=policy)  # it went on itself
            break
        done = run_git(scratch, "-c", "core.editor=true", "rebase", "--continue", policy=policy,
                       check=False)  # fmt: skip
        paths = _unmerged(scratch, policy)
    if done.returncode != 0:
        # What is conflicted now, or what was when a resolver gave the replay up itself.
        paths = _unmerged(scratch, policy) or paths
        run_git(scratch, "rebase", "--abort", policy=policy, check=False)
        drop_scratch(root, scratch)
        if paths:
            return (IntegrationConflicted(onto, paths, clock()),)
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        return (IntegrationFailed(f"git rebase onto {onto[:12]} failed: {said[0]}", clock()),)
    head = git_out(scratch, "rev-parse", "HEAD").strip()
    if resolved and not _holds(root, head, onto):
        # The resolver gave the replay up (a rebase --abort of its own): still conflicted.
        drop_scratch(root, scratch)
        return (IntegrationConflicted(onto, tuple(resolved), clock()),)
    missing = pending - _ralph_commits(root, f"{onto}..{head}")
    if missing:
        drop_scratch(root, scratch)
        shown = ", ".join(sorted(missing)[:5])
        reason = f"the replay lost {len(missing)} of ralph's commits ({EFFECT_TRAILER}: {shown})"
        return (IntegrationFailed(reason, clock()),)
    rebased = IntegrationRebased(onto, tip, head, clock())
    if resolved and effect.resolver is not None:
        return (IntegrationResolved(effect.resolver, tuple(resolved), clock()), rebased)
    return (rebased,)


def _unmerged(scratch: Path, policy: GitPolicy) -> tuple[str, ...]:
    """The paths git left conflicted in the scratch worktree."""
    listed = run_git_bytes(
        scratch, "diff", "--name-only", "-z", "--diff-filter=U", policy=policy, check=False
    )
    return tuple(os.fsdecode(p) for p in listed.stdout.split(b"\0") if p)


def _settled(scratch: Path, paths: tuple[str, ...], policy: GitPolicy) -> bool:
    """Whether the resolver left no conflict: no marker in the conflicted files (those it
    kept), and once its changes are staged (ralph's own folders left out), no unmerged
    path."""
    for path in paths:
        file = scratch / path
        try:
            if file.is_file() and not file.is_symlink() and _MARKERS.search(file.read_bytes()):
                return False
        except OSError:
            return False
    if _rebasing(scratch, policy):
        staged = run_git(
            scratch, "add", "--all", "--", ".", *own_pathspecs(), policy=policy, check=False
        )
        if staged.returncode != 0:
            return False
    return not _unmerged(scratch, policy)


def _rebasing(scratch: Path, policy: GitPolicy) -> bool:
    """Whether a rebase is still under way in the scratch worktree."""
    for name in ("rebase-merge", "rebase-apply"):
        found = run_git(scratch, "rev-parse", "--git-path", name, policy=policy, check=False)
        if (scratch / found.stdout.strip()).exists():
            return True
    return False


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
