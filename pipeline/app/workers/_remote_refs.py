"""The landing's refs when the target is a branch on a remote ticket's remote (I/O: git).

A remote ticket lands from its repository ``W/<T>``, where the target is a local branch that
is never checked out. Before the landing reads it, :meth:`RemoteRefs.refresh` brings it to
where the remote's stands; a move is the claim's atomic push (:meth:`RemoteRun.move`: the ref
leased on its old value, the claim ref on with it), so a zombie worker fenced by a newer claim
moves nothing, and a target someone pushed meanwhile is reported, never overwritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import final

from pipeline.app.workers._remote_run import RemoteRefusedError, RemoteRun
from pipeline.app.workers._ticket_repo import fetch_from_cache
from pipeline.handlers.runtime import run_git

__all__ = ["RemoteRefs"]

_HEADS = "refs/heads/"


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
