"""A queue worker's landing of a ticket's run (``[run] merge = true``): through the
repository's merge queue (a remote ticket's: onto its remote's target), its integration's
facts in the run's log in the queue's store."""

from __future__ import annotations

from pathlib import Path

from pipeline import PipelineError
from pipeline.app.workers._remote import remote_key
from pipeline.app.workers._remote_refs import RemoteRefs
from pipeline.app.workers._remote_run import RemoteRun, RemoteUnreachableError
from pipeline.app.workspace import Workspace, land_remote, land_run
from pipeline.core.state import PipelineState, TerminationReason
from pipeline.handlers.runtime import GitError
from pipeline.handlers.store import RunStore, StoreError

__all__ = ["land_ticket"]


def land_ticket(
    root: Path, workspace: Workspace, state: PipelineState, store: RunStore, url: str, *,
    remote: RemoteRun | None = None, config_text: str | None = None,
) -> str:  # fmt: skip
    """Land the run (``state``) that worked in ``workspace``, a worktree of ``root``, when its
    configuration says ``[run] merge = true`` and it completed its work, its log in the
    queue's ``store`` at ``url`` (where the integrators' lease is taken); how that ended, as
    the ticket's detail goes on ("; landed on main"), or "" when there was nothing to land.
    A remote ticket's run (``remote``, its claim held; ``root`` unused) lands on the remote's
    target, its gates run with the ticket's ``config_text``."""
    if not workspace.config.run.merge or state.run is None:
        return ""
    if state.progress.termination is not TerminationReason.COMPLETED:
        return ""
    if remote is not None and config_text is None:
        raise ValueError("a remote ticket lands with its configuration's text")
    try:
        if remote is None or config_text is None:
            landing = land_run(root, workspace.layout.root, store, state.run.run_id, lease=url)
        else:
            landing = land_remote(
                remote.repo, RemoteRefs(remote), store, state.run.run_id,
                branch=remote.branch, target=remote.target, config_text=config_text,
                url=remote_key(remote.url), lease=url,
            )  # fmt: skip
    except (StoreError, RemoteUnreachableError):
        # The store or the lease is gone: the ticket is taken over, not done. The remote is
        # away: the ticket goes back, and the worker that claims it next resumes the run,
        # complete, whose landing goes on from the facts its log holds.
        raise
    except (PipelineError, GitError, OSError) as error:
        # The run completed all the same: the ticket is done; `ralph worktrees merge` goes on,
        # or, for a remote ticket (its branch pushed), the remote's own way of merging.
        if remote is None:
            return f"; not merged: {error}"
        there = f"{remote.branch} of {remote.url}"
        return f"; not merged: {error} (the run is on {there}: merge it into {remote.target} there)"
    now = landing.integration
    said = now.reason or ", ".join(now.paths)
    return f"; {now.status.value} on {now.target}" + (f" ({said})" if said else "")
