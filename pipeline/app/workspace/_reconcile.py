"""Reconciliation: the run's log against git and the events file, at every resume, in
``ralph replay --verify`` and in ``ralph status`` (I/O).

The log's ``CommitCreated`` facts (each with the id of the effect it answered, found by
folding the log) are compared with the commits on HEAD carrying the run's ``Ralph-Effect``
trailers; the last recorded branch with HEAD's; the bytes of the events file with the offset
the log has read. git ahead of the log by exactly the commit step about to be asked for again
is fine (that step finds its commit by its trailer); anything else that differs is a problem
the run must not go on over: a step would be done twice, or work done on history that is gone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import final

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.effects import CreateCommit, SaveCheckpoint
from pipeline.core.state import Phase, PipelineState
from pipeline.events import (
    CheckpointSaved,
    CommitCreated,
    Instant,
    PipelineEvent,
    RunForked,
    RunResumed,
)
from pipeline.handlers.runtime import GitCommit, GitHistory, WorkspaceLayout, run_history
from pipeline.orchestration import effect_id, next_step
from pipeline.reducers import reduce

__all__ = [
    "Reconciliation",
    "RecordedCommit",
    "RunDivergedError",
    "history_of",
    "pending_commit",
    "reconcile",
    "recorded_commits",
]


class RunDivergedError(PipelineError, RuntimeError):
    """The run's log and git (or its events file) disagree; the message says how and what a
    person can do. The run is not resumed."""


@final
@frozen(kw_only=True)
class RecordedCommit:
    """A ``CommitCreated`` fact of the log, with the id of the effect it answered."""

    effect_id: str
    sha: str
    branch: str


@final
@frozen(kw_only=True)
class Reconciliation:
    """What differs between the log and the world."""

    problems: tuple[str, ...]
    """One sentence each: what differs and what a person can do."""
    missing: tuple[RecordedCommit, ...]
    """Commits the log records that are no longer on HEAD."""


def recorded_commits(events: Iterable[PipelineEvent]) -> tuple[PipelineState, list[RecordedCommit]]:
    """The fold of ``events`` and their commits, each with its effect id (a fork's commits
    before the fork are on the fork's branch now)."""
    state = PipelineState()
    commits: list[RecordedCommit] = []
    for event in events:
        if isinstance(event, CommitCreated):
            commits.append(
                RecordedCommit(effect_id=str(effect_id(state)), sha=event.sha, branch=event.branch)
            )
        elif isinstance(event, RunForked):
            commits = [
                RecordedCommit(effect_id=c.effect_id, sha=c.sha, branch=event.branch)
                for c in commits
            ]
        state = reduce(state, event)
    return state, commits


def history_of(root: Path, run_id: str, events: Sequence[PipelineEvent]) -> GitHistory:
    """The run's commits on HEAD (``run_history``); for a fork (``RunForked``), also those on
    HEAD that the runs it was forked from made (only their commits before each fork are on
    the fork's HEAD), whose effects its copied log names as its own.

    Raises :class:`~pipeline.handlers.runtime.GitError` when git fails.
    """
    history = run_history(root, run_id)
    # A fork of a fork inherits from each run it came through.
    sources = dict.fromkeys(e.source_run for e in events if isinstance(e, RunForked))
    inherited = tuple(
        GitCommit(sha=c.sha, effect_id=f"{run_id}:{c.effect_id.removeprefix(f'{source}:')}")
        for source in sources
        for c in run_history(root, source).commits
    )
    return GitHistory(
        commits=(*history.commits, *inherited), head=history.head, branch=history.branch
    )


def pending_commit(state: PipelineState) -> str | None:
    """The id of the commit step a resume would ask for first, if it is one."""
    if state.run is None or state.phase is Phase.COMPLETE:
        return None
    at = Instant(datetime(2000, 1, 1, tzinfo=UTC))  # never stored: any instant will do
    resumed = reduce(state, RunResumed(checkpoint_sequence=None, at=at))
    # A hook due again before the step is not counted in its id: the step is what matters.
    effect = next_step(resumed)
    # A checkpoint still due (the process died before saving it) comes first.
    while isinstance(effect, SaveCheckpoint):
        resumed = reduce(
            resumed, CheckpointSaved(trigger=effect.trigger, sequence=effect.sequence, at=at)
        )
        effect = next_step(resumed)
    return str(effect.effect_id) if isinstance(effect, CreateCommit) else None


def reconcile(
    run_id: str,
    state: PipelineState,
    recorded: list[RecordedCommit],
    history: GitHistory,
    layout: WorkspaceLayout | None = None,
) -> Reconciliation:
    """Compare the run's log (its fold ``state`` and ``recorded`` commits) with ``history``
    and, with ``layout``, with the run's events file."""
    problems: list[str] = []
    where = f"HEAD ({history.branch} at {(history.head or 'no commit')[:12]})"
    git_shas = {c.sha for c in history.commits}
    git_effects: dict[str, list[str]] = {}
    for commit in history.commits:
        git_effects.setdefault(commit.effect_id, []).append(commit.sha)
    for effect, shas in sorted(git_effects.items()):
        if len(shas) > 1:
            problems.append(
                f"effect {effect} was committed {len(shas)} times "
                f"({', '.join(s[:12] for s in shas)}): a step was done twice; revert the extra "
                "commit before going on"
            )
    # A rebase rewrites shas but keeps the trailers: a commit is there by sha or by effect.
    missing = tuple(r for r in recorded if r.sha not in git_shas and r.effect_id not in git_effects)
    if missing:
        listed = ", ".join(f"{r.sha[:12]} (effect {r.effect_id})" for r in missing)
        last = recorded[-1]
        problems.append(
            f"the log records {len(missing)} commit(s) no longer on {where}: {listed}; history "
            f"was rewritten or the branch switched under the run. Put the branch back "
            f"(git switch {last.branch}; git reset --hard {last.sha[:12]}) and resume, "
            "or start a new run"
        )
    known_shas = {r.sha for r in recorded}
    known_effects = {r.effect_id for r in recorded}
    pending = pending_commit(state)
    extra = [
        c
        for c in history.commits
        if c.sha not in known_shas and c.effect_id not in known_effects and c.effect_id != pending
    ]
    if extra:
        listed = ", ".join(f"{c.sha[:12]} (effect {c.effect_id})" for c in extra)
        problems.append(
            f"git holds {len(extra)} commit(s) of this run its log does not record: {listed}; "
            "the log lost facts, and resuming would do those steps again. Inspect the log "
            "(ralph replay --verify); to redo the steps, remove the commits "
            "(git reset --hard <commit before them>) and resume, or start a new run"
        )
    if recorded and not missing and history.branch != recorded[-1].branch:
        problems.append(
            f"the run's last commit is on branch {recorded[-1].branch}, but HEAD is on "
            f"{history.branch}: switch back (git switch {recorded[-1].branch}) and resume"
        )
    if layout is not None:
        problems += _events_file_problems(layout, run_id, state)
    return Reconciliation(problems=tuple(problems), missing=missing)


def _events_file_problems(layout: WorkspaceLayout, run_id: str, state: PipelineState) -> list[str]:
    read = state.intake.events_offset
    if read == 0:
        return []
    path = layout.events_file(run_id)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        size = None
    if size is not None and size >= read:
        return []
    holds = "is gone" if size is None else f"holds {size} bytes"
    return [
        f"the events file {path} {holds}, but the log has read {read} bytes of it: it was "
        "truncated, replaced or removed, and topics the agents published are lost. Restore "
        "it, or start a new run"
    ]
