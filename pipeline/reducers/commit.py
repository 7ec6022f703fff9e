"""Reducer for commit and rebase facts (pure)."""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Ledger, Notice, Phase, PipelineState, Step
from pipeline.events import (
    GIT_RESTORED_TOPIC,
    CommitCreated,
    CommitEvent,
    CommitMessageGenerated,
    CommitSkipped,
    GitMetadataRestored,
    RebaseAborted,
    RebaseConflicted,
    RebaseEvent,
    RebaseStarted,
    RebaseSucceeded,
)
from pipeline.reducers._build import advance, anomaly
from pipeline.reducers._notices import add_notice
from pipeline.reducers._spend import mark_progress
from pipeline.reducers._topics import notify
from pipeline.reducers._transitions import after_commit, new_task

__all__ = ["reduce_commit", "reduce_rebase"]


def _moved_base(state: PipelineState, head: str) -> PipelineState:
    """``state`` whose developer tasks' screens start at ``head`` from now on (when the run
    screens): ralph's own commit, or the branch rebased."""
    if not state.gating.base_recorded:
        return state
    return evolve(state, gating=evolve(state.gating, work_base=head))


def _at(state: PipelineState, step: Step) -> bool:
    return state.progress.phase is Phase.COMMIT_MESSAGE and state.progress.step is step


def reduce_commit(state: PipelineState, event: CommitEvent) -> PipelineState:
    """Fold one commit fact into ``state``."""
    ledger = state.ledger
    match event:
        case CommitMessageGenerated():
            if not _at(state, Step.INVOKE):
                return anomaly(state, event, "no committer is at work")
            return advance(
                state,
                progress=evolve(state.progress, step=Step.COMMIT),
                agent=new_task(state.agent),
                ledger=evolve(ledger, pending_commit_message=event.message),
            )
        case CommitCreated():
            if not _at(state, Step.COMMIT):
                return anomaly(state, event, "no commit was asked for")
            committed = evolve(
                ledger,
                commits=ledger.commits + 1,
                last_commit_sha=event.sha,
                pending_commit_message=None,
                spend=mark_progress(ledger.spend),
            )
            return _committed(_moved_base(state, event.sha), committed)
        case CommitSkipped():
            if not _at(state, Step.COMMIT):
                return anomaly(state, event, "no commit was asked for")
            return _committed(state, evolve(ledger, pending_commit_message=None))
        case GitMetadataRestored():
            # Whenever it is found, the next working prompt tells the agent what was undone.
            text = (
                "ralph undid your changes to files that are not yours to change "
                f"({', '.join(event.paths)}): the repository's git configuration, hooks and "
                "info/, which ralph's own git commands read; the agent CLIs' project settings "
                "(.mcp.json, opencode.json, .codex, .gemini) and the links among their own "
                "settings, whose servers and hooks the person's own tools start; in the "
                "sandbox, the protected paths (.vscode, .idea, .gitmodules, shell start-up "
                "files), whose tasks the person's editor and shell run; and a repository of "
                "your own inside the work tree (a new .git), whose configuration the person's "
                "git would read"
            )
            notice = Notice(topic=GIT_RESTORED_TOPIC, text=text)
            return notify(state, add_notice(state.intake, notice))
        case _:
            assert_never(event)


def _committed(state: PipelineState, ledger: Ledger) -> PipelineState:
    """Rebase when the run is configured to, else go on where the run was heading."""
    assert state.run is not None
    if state.run.rebase_onto is not None:
        return advance(state, progress=evolve(state.progress, step=Step.REBASE), ledger=ledger)
    return after_commit(state, ledger)


def reduce_rebase(state: PipelineState, event: RebaseEvent) -> PipelineState:
    """Fold one rebase fact into ``state``: a conflict is aborted, then the run goes on."""
    match event:
        case RebaseStarted():
            if not _at(state, Step.REBASE):
                return anomaly(state, event, "no rebase was asked for")
            return advance(state)
        case RebaseSucceeded():
            if not _at(state, Step.REBASE):
                return anomaly(state, event, "no rebase is under way")
            return after_commit(_moved_base(state, event.head))
        case RebaseConflicted():
            if not _at(state, Step.REBASE):
                return anomaly(state, event, "no rebase is under way")
            ledger = evolve(
                state.ledger, last_error=f"rebase conflicted in {', '.join(event.paths)}"
            )
            return advance(
                state, progress=evolve(state.progress, step=Step.ABORT_REBASE), ledger=ledger
            )
        case RebaseAborted():
            if not _at(state, Step.ABORT_REBASE):
                return anomaly(state, event, "no rebase abort was asked for")
            return after_commit(state)
        case _:
            assert_never(event)
