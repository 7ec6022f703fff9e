"""The runtime's I/O boundary: an operating-system failure becomes a fact, in one place.

A handler step that touches the file system (or runs git) is an ``action`` returning its
facts; when it raises ``OSError`` (or ``GitError``) the step reports ``WorkspaceIoError``
naming the place instead, and the reducer decides what the run does about it: the one
``try``/``except`` for it, so no handler writes its own. (One fallible call, so a plain
``except`` rather than ``returns``, whose import alone cost a command that reads git's
history more than its reading.)
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.events import Instant, PipelineEvent, WorkspaceErrorKind, WorkspaceIoError

__all__ = ["Facts", "facts_or_io_error"]

Facts = tuple[PipelineEvent, ...]
"""What one step of a handler reports."""


def facts_or_io_error(
    action: Callable[[], Facts],
    kind: WorkspaceErrorKind,
    path: str,
    clock: Callable[[], Instant],
    what: str = "",
    catching: tuple[type[Exception], ...] = (OSError,),
) -> Facts:
    """The facts of ``action``, or, when it fails with one of ``catching`` (``OSError``; a
    git command's failure for git steps), the ``WorkspaceIoError`` of ``kind`` at ``path``
    (its message ``what`` followed by the error)."""
    try:
        return action()
    except catching as error:
        return (WorkspaceIoError(kind=kind, path=path, message=f"{what}{error}", at=clock()),)
