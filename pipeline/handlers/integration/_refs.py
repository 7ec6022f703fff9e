"""Where the landing reads and moves its target (I/O: git): the port a landing onto another
repository plugs into, and the repository's own branches. A ref is read after ``refresh`` and
moved only by ``swap``, a compare-and-swap, so every adapter keeps :mod:`._move`'s guarantees: a
target moved by someone else is reported, never overwritten; a lost answer is found by a read."""

from __future__ import annotations

from pathlib import Path
from typing import Final, Protocol, final

from pipeline.handlers.runtime import run_git

__all__ = ["LOCAL_REFS", "LocalRefs", "TargetRefs"]


class TargetRefs(Protocol):
    """How the landing brings a branch ref of ``root``'s repository up to its target, and
    moves it."""

    def refresh(self, root: Path, ref: str) -> None:
        """Bring ``ref`` up to where the target stands, before the landing reads it."""

    def swap(self, root: Path, ref: str, new: str, old: str, message: str) -> bool:
        """Whether ``ref`` moved from ``old`` to ``new`` (only from ``old``: a refusal moves
        nothing); ``message`` is the move's reflog line."""


@final
class LocalRefs:
    """The target is the repository's own branch: nothing to refresh; a swap is ``git
    update-ref -m MESSAGE REF NEW OLD``."""

    def refresh(self, root: Path, ref: str) -> None:
        """Nothing: the ref is the target itself."""

    def swap(self, root: Path, ref: str, new: str, old: str, message: str) -> bool:
        """Whether ``ref`` moved from ``old`` to ``new`` (git's compare-and-swap)."""
        done = run_git(root, "update-ref", "-m", message, ref, new, old, check=False)
        return done.returncode == 0


LOCAL_REFS: Final[TargetRefs] = LocalRefs()
"""The landing's refs unless it is given others: the repository's own branches."""
