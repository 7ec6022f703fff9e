"""Replaying a completed run's branch onto its target, and the screen before it (I/O: git).

The queue lands only what ralph made: every commit between the target and the branch's head
must be one of the run's own, recorded in its log (``CommitCreated``), and the head its last.
A commit is the run's by its id, or, after a person rebased the branch (new ids, trailers
kept), by its ``Ralph-Effect`` trailer naming an effect the log recorded a commit for, one
commit per effect. Anything else (a commit another run's agent added through the shared git
folder, the agent's own ``git commit``, a forged or copied trailer, a person's own commit) is
refused, named, before anything is replayed or gated.

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
from typing import Final, final

from attrs import frozen

from pipeline.core.state import Integration, IntegrationStatus
from pipeline.events import (
    Instant,
    IntegrationConflicted,
    IntegrationFailed,
    IntegrationRebased,
    IntegrationResolved,
    PipelineEvent,
)
from pipeline.handlers.runtime import (
    EFFECT_TRAILER,
    GitPolicy,
    drop_scratch,
    fresh_scratch,
    git_out,
    holds,
    own_pathspecs,
    revision,
    run_git,
    run_git_bytes,
)

__all__ = [
    "MAX_RESOLUTIONS",
    "ForeignCommit",
    "Resolve",
    "RunCommits",
    "foreign_commits",
    "refusal",
    "replay_branch",
]


Resolve = Callable[[tuple[str, ...]], bool]
"""Has the resolver agent at the conflicts in these paths (in the scratch worktree); whether
it ended well (how the files stand is checked afterwards, whatever it says)."""

MAX_RESOLUTIONS: Final = 100
"""The most conflicted stops of one replay a resolver is put to (one per replayed commit at
most): a bound whatever the agent does."""

_MARKERS: Final = re.compile(rb"^(<{7,}|>{7,})( |$)", re.MULTILINE)
"""A conflict marker git writes, at the start of a line (longer with a
``conflict-marker-size`` attribute)."""

_SHOWN: Final = 5
"""How many foreign commits a refusal names (it says how many there are)."""


@final
@frozen(kw_only=True)
class RunCommits:
    """The commits run ``run_id``'s log records, oldest first: each the effect id it answered
    and its sha (``CommitCreated``); ``sources``: the runs it was forked from, whose trailers
    name the effects its copied log holds as its own (``RunForked``)."""

    run_id: str
    commits: tuple[tuple[str, str], ...]
    sources: tuple[str, ...] = ()

    def effect_of(self, trailer: str) -> str:
        """The effect id of the run's log that a ``Ralph-Effect`` value names."""
        for source in self.sources:
            if trailer.startswith(f"{source}:"):
                return f"{self.run_id}:{trailer.removeprefix(f'{source}:')}"
        return trailer


@final
@frozen(kw_only=True)
class ForeignCommit:
    """A commit of the branch ralph did not make in the run: its id, subject, and why."""

    sha: str
    subject: str
    why: str


def foreign_commits(root: Path, onto: str, tip: str, made: RunCommits) -> tuple[ForeignCommit, ...]:
    """The commits of ``onto..tip`` (merges aside: a replay drops them) that are not ``made``'s,
    oldest first; and, when all are, ``tip`` itself when it is not the run's last commit."""
    listed = run_git_bytes(
        root, "log", "-z", "--reverse", "--no-merges",
        f"--format=%H%n%(trailers:key={EFFECT_TRAILER},valueonly,unfold,separator=%x20)%n%s",
        f"{onto}..{tip}", "--", policy=GitPolicy(),
    )  # fmt: skip
    commits = [_fields(record) for record in listed.stdout.split(b"\0") if record.strip()]
    by_sha = {sha: effect for effect, sha in made.commits}
    recorded = set(by_sha.values())
    # A commit by its own id first, so that a copy of its trailer cannot take its place.
    used = {by_sha[sha] for sha, _, _ in commits if sha in by_sha}
    matched: dict[str, str] = {}
    foreign: list[ForeignCommit] = []
    for sha, trailers, subject in commits:
        if sha in by_sha:
            matched[sha] = by_sha[sha]
            continue
        effects = [made.effect_of(t) for t in trailers.split()]
        why = _why(effects, recorded, used)
        if why is None:
            used.add(effects[0])
            matched[sha] = effects[0]
        else:
            foreign.append(ForeignCommit(sha=sha, subject=subject, why=why))
    if foreign or not commits:
        return tuple(foreign)
    if not made.commits or matched.get(tip) != made.commits[-1][0]:
        shown = run_git_bytes(root, "log", "-1", "--format=%s", tip, "--", policy=GitPolicy())
        subject = shown.stdout.decode("utf-8", "replace").strip()
        return (
            ForeignCommit(
                sha=tip, subject=subject, why="the branch's head, not the run's last commit"
            ),
        )
    return ()


def _fields(record: bytes) -> tuple[str, str, str]:
    """A commit's id, ``Ralph-Effect`` values and subject, from one record of the listing."""
    # Replaced, not escaped: the subject goes into a fact, which holds only valid text.
    sha, trailers, subject = (*record.decode("utf-8", "replace").split("\n", 2), "", "")[:3]
    return sha.strip(), trailers, subject


def _why(effects: list[str], recorded: set[str], used: set[str]) -> str | None:
    """Why a commit (not recorded by its id) with ``Ralph-Effect`` values ``effects`` is not
    the run's; None when it is its rebased commit of a recorded effect."""
    if not effects:
        return f"no {EFFECT_TRAILER} trailer"
    if len(effects) > 1:
        return f"{len(effects)} {EFFECT_TRAILER} trailers"
    (effect,) = effects
    if effect not in recorded:
        return f"{EFFECT_TRAILER} {effect}, which the run's log does not record"
    if effect in used:
        return f"a second commit for {EFFECT_TRAILER} {effect}"
    return None


def refusal(run_id: str, tip: str, foreign: tuple[ForeignCommit, ...]) -> str:
    """Why the landing of a branch (at ``tip``) is refused, naming the ``foreign`` commits,
    and what a person can do."""
    shown = "; ".join(f"{c.sha[:12]} {c.subject} ({c.why})" for c in foreign[:_SHOWN])
    more = f"; and {len(foreign) - _SHOWN} more" if len(foreign) > _SHOWN else ""
    return (
        f"the branch holds {len(foreign)} commit(s) ralph did not make in run {run_id}: "
        f"{shown}{more}. Only the run's own commits are landed. If they are yours, keep them "
        f"on a branch of their own (git branch NAME {tip[:12]}), take them off this one in its "
        "worktree (git rebase -i), merge again, and land them separately; if they are not, "
        "something else wrote to the repository: inspect them before anything else"
    )


def replay_branch(
    now: Integration,
    last: str | None,
    root: Path,
    scratch: Path,
    policy: GitPolicy,
    clock: Callable[[], Instant],
    made: RunCommits,
    resolve: Resolve | None = None,
) -> tuple[PipelineEvent, ...]:
    """Replay ``now.branch`` onto ``now.target``'s head in ``scratch`` and report the
    replayed head, the conflicted paths, or why it cannot be done; ``resolve`` (the resolver
    at work when ``now`` is resolving) is had at each conflict first. A branch holding a
    commit that is not one of ``made`` (the commits the run's log records), or not ending at
    its last (``last``), is refused before anything is replayed."""
    onto = revision(root, f"refs/heads/{now.target}")
    if onto is None:
        return (IntegrationFailed(reason=f"there is no branch {now.target!r}", at=clock()),)
    tip = revision(root, f"refs/heads/{now.branch}")
    if tip is None:
        return (IntegrationFailed(reason=f"the run's branch {now.branch!r} is gone", at=clock()),)
    if last is not None and not _holds_run_commit(root, tip, last):
        reason = f"{now.branch} no longer holds {last[:12]}, the run's last commit in its log"
        return (IntegrationFailed(reason=reason, at=clock()),)
    foreign = foreign_commits(root, onto, tip, made)
    if foreign:
        return (IntegrationFailed(reason=refusal(made.run_id, tip, foreign), at=clock()),)
    pending = _ralph_commits(root, f"{onto}..{tip}")
    fresh_scratch(root, scratch, tip)
    signing = "--gpg-sign" if policy.sign else "--no-gpg-sign"
    args = ("rebase", signing, "--reapply-cherry-picks", "--empty=keep", "--no-autosquash")
    done = run_git(scratch, *args, "--end-of-options", onto, policy=policy, check=False)
    resolver = now.resolver if now.status is IntegrationStatus.RESOLVING else None
    resolve = None if resolver is None else resolve
    resolved: dict[str, None] = {}
    paths = _unmerged(scratch, policy)
    for _ in range(MAX_RESOLUTIONS):
        if done.returncode == 0 or not paths or resolve is None:
            break
        before = _stop(scratch, paths, policy)
        left = {path: _content(scratch / path) for path in paths}
        if not resolve(paths) or not _settled(scratch, left, before, policy):
            break
        resolved.update(dict.fromkeys(paths))
        done = run_git(scratch, "-c", "core.editor=true", "rebase", "--continue", policy=policy,
                       check=False)  # fmt: skip
        paths = _unmerged(scratch, policy)
    if done.returncode != 0:
        # What is conflicted now, or what was when a resolver gave the replay up itself.
        paths = _unmerged(scratch, policy) or paths
        run_git(scratch, "rebase", "--abort", policy=policy, check=False)
        drop_scratch(root, scratch)
        if paths:
            return (IntegrationConflicted(onto=onto, paths=paths, at=clock()),)
        said = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no message"]
        return (
            IntegrationFailed(reason=f"git rebase onto {onto[:12]} failed: {said[0]}", at=clock()),
        )
    head = git_out(scratch, "rev-parse", "HEAD").strip()
    replayed = _count(root, f"{onto}..{head}")
    if not holds(root, head, onto) or replayed != _count(root, f"{onto}..{tip}"):
        drop_scratch(root, scratch)
        reason = f"the replay is not {now.branch}'s commits on {onto[:12]}, one for one"
        return (IntegrationFailed(reason=reason, at=clock()),)
    missing = pending - _ralph_commits(root, f"{onto}..{head}")
    if missing:
        drop_scratch(root, scratch)
        shown = ", ".join(sorted(missing)[:5])
        reason = f"the replay lost {len(missing)} of ralph's commits ({EFFECT_TRAILER}: {shown})"
        return (IntegrationFailed(reason=reason, at=clock()),)
    rebased = IntegrationRebased(onto=onto, tip=tip, head=head, at=clock())
    if resolved and resolver is not None:
        return (
            IntegrationResolved(agent=resolver, paths=tuple(resolved), at=clock()),
            rebased,
        )
    return (rebased,)


def _unmerged(scratch: Path, policy: GitPolicy) -> tuple[str, ...]:
    """The paths git left conflicted in the scratch worktree."""
    listed = run_git_bytes(
        scratch, "diff", "--name-only", "-z", "--diff-filter=U", policy=policy, check=False
    )
    return tuple(os.fsdecode(p) for p in listed.stdout.split(b"\0") if p)


Stop = tuple[str, bytes, dict[str, bytes | None]]
"""Where a replay stopped on a conflict: HEAD, and each other path that differs from it (what
the commit being replayed brought cleanly): their index entries as git lists them, and each
one's content."""


def _stop(scratch: Path, paths: tuple[str, ...], policy: GitPolicy) -> Stop:
    """The replay's stop as the resolver finds it, but for the conflicted ``paths``."""
    head = git_out(scratch, "rev-parse", "HEAD").strip()
    others = sorted(_changed(scratch, policy) - set(paths))
    if not others:
        return head, b"", {}
    listed = run_git_bytes(
        scratch, "ls-files", "--stage", "-z", "--", *(f":(literal){p}" for p in others),
        policy=policy,
    )  # fmt: skip
    return head, listed.stdout, {path: _content(scratch / path) for path in others}


def _content(file: Path) -> bytes | None:
    """A path's content as git would take it (a symlink's target), None when it is absent."""
    try:
        return os.fsencode(os.readlink(file)) if file.is_symlink() else file.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _settled(scratch: Path, left: dict[str, bytes | None], before: Stop, policy: GitPolicy) -> bool:
    """Whether the resolver resolved the conflicts in the files git ``left`` (with what it
    left in them) and did nothing else: the replay still stopped where it was (no commit,
    rebase step or abort of its own), nothing else changed from how it found it (ralph's own
    folders aside), each conflicted file changed, with no conflict marker and no symlink;
    then, those staged, nothing stays unmerged."""
    paths = tuple(left)
    if not _rebasing(scratch, policy) or _stop(scratch, paths, policy) != before:
        return False
    for path, was in left.items():
        file = scratch / path
        try:
            if file.is_symlink() or (file.is_file() and _MARKERS.search(file.read_bytes())):
                return False
        except OSError:
            return False
        if _content(file) == was:
            return False  # untouched: nothing was resolved
    staged = run_git(
        scratch, "add", "--all", "--", *(f":(literal){p}" for p in paths), policy=policy,
        check=False,
    )  # fmt: skip
    return staged.returncode == 0 and not _unmerged(scratch, policy)


def _changed(scratch: Path, policy: GitPolicy) -> set[str]:
    """Every path that differs from HEAD in the scratch worktree (staged, unstaged, untracked),
    ralph's own folders aside."""
    listed = run_git_bytes(
        scratch, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
        "--", ".", *own_pathspecs(), policy=policy,
    )  # fmt: skip
    return {os.fsdecode(entry[3:]) for entry in listed.stdout.split(b"\0") if len(entry) > 3}


def _rebasing(scratch: Path, policy: GitPolicy) -> bool:
    """Whether a rebase is still under way in the scratch worktree."""
    for name in ("rebase-merge", "rebase-apply"):
        found = run_git(scratch, "rev-parse", "--git-path", name, policy=policy, check=False)
        if (scratch / found.stdout.strip()).exists():
            return True
    return False


def _count(root: Path, span: str) -> int:
    """How many commits (merges aside) ``span`` holds."""
    return int(git_out(root, "rev-list", "--count", "--no-merges", span).strip() or 0)


def _holds_run_commit(root: Path, tip: str, commit: str) -> bool:
    """Whether ``tip``'s history holds ``commit``, or, after a person rebased the branch
    (say, to resolve a conflict), the commit the same effect made (its trailer)."""
    if holds(root, tip, commit):
        return True
    trailer = f"--format=%(trailers:key={EFFECT_TRAILER},valueonly)"
    said = run_git(root, "log", "-1", trailer, commit, "--", check=False)
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
