"""A queue worker's landing of a ticket's run (``[run] merge = true``): through the
repository's merge queue (a remote ticket's: onto its remote's target), its integration's
facts in the run's log in the queue's store (I/O: git, stores).

A remote ticket lands from its repository ``W/<T>``, where the target is a local branch that
is never checked out, through :class:`RemoteRefs`: before the landing reads the target,
:meth:`RemoteRefs.refresh` brings it to where the remote's stands; a move is the claim's
atomic push (:meth:`RemoteRun.move`: the ref leased on its old value, the claim ref on with
it), so a zombie worker fenced by a newer claim moves nothing, and a target someone pushed
meanwhile is reported, never overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import final

from pipeline import PipelineError
from pipeline.app.workers._remote import remote_key
from pipeline.app.workers._remote_run import RemoteRefusedError, RemoteRun, RemoteUnreachableError
from pipeline.app.workers._ticket_repo import fetch_from_cache
from pipeline.app.workspace import Workspace, land_remote, land_run
from pipeline.core.state import PipelineState, TerminationReason
from pipeline.handlers.runtime import GitError, run_git
from pipeline.handlers.store import RunStore, StoreError

__all__ = ["RemoteRefs", "land_ticket"]

_HEADS = "refs/heads/"


def land_ticket(
    root: Path, workspace: Workspace, state: PipelineState, store: RunStore, url: str, *,
    remote: RemoteRun | None, config_text: str,
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
    try:
        if remote is None:
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


@final
class RemoteRefs:
    """The :class:`~pipeline.handlers.integration.TargetRefs` of the claimed ticket
    ``remote``: its repository's branches, moved on the remote first."""

    def __init__(self, remote: RemoteRun) -> None:
        self.remote = remote

    def refresh(self, root: Path, ref: str) -> None:
        """Fetch the remote's ``ref`` into the cache, then force it into ``root`` (the
        ticket's repository, where it is not checked out). Raises ``GitError`` and the
        remote's errors."""
        self.remote.fetch(ref)
        fetch_from_cache(root, self.remote.cache, [_branch(ref)])

    def swap(self, root: Path, ref: str, new: str, old: str, message: str) -> bool:
        """Whether ``ref`` moved from ``old`` to ``new`` on the remote (then in ``root`` too).
        A refusal refreshes ``ref`` first, so the landing's next read finds where the remote
        has it, unless it is the run's branch, checked out in ``root``: its files stay.
        Raises :class:`RemoteRefusedError` when the host declined a push of the target."""
        said = f"{message} ({self.remote.ticket}: {ref} at {new})"
        try:
            refused = self.remote.move(ref, new, old, said)
        except RemoteRefusedError:
            if _branch(ref) != self.remote.branch:
                raise  # the host declines the target: the landing stops, "not merged"
            # The run's branch following a landed target (non-fast-forward, which a host may
            # deny) stays where it was: its commits are on the target.
            return False
        if refused is not None:
            if _branch(ref) != self.remote.branch:
                self.refresh(root, ref)
            return False
        run_git(root, "update-ref", "-m", message, ref, new)
        return True


def _branch(ref: str) -> str:
    """The branch ``ref`` names (``ValueError`` for a ref that is no branch)."""
    if not ref.startswith(_HEADS):
        raise ValueError(f"{ref} is not a branch: only branches land on a remote")
    return ref.removeprefix(_HEADS)
