"""The merge queue's screen of a branch before it is replayed (I/O: git).

The queue lands only what ralph made: every commit between the target and the branch's head
must be one of the run's own, recorded in its log (``CommitCreated``), and the head its last.
A commit is the run's by its id, or, after a person rebased the branch (new ids, trailers
kept), by its ``Ralph-Effect`` trailer naming an effect the log recorded a commit for, one
commit per effect. Anything else (a commit another run's agent added through the shared git
folder, the agent's own ``git commit``, a forged or copied trailer, a person's own commit) is
refused, named, before anything is replayed or gated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, final

from attrs import frozen

from pipeline.handlers.runtime import EFFECT_TRAILER, GitPolicy, run_git_bytes

__all__ = ["ForeignCommit", "RunCommits", "foreign_commits", "refusal"]

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
