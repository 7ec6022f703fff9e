"""Changing the prompt file's permissions, only ever inside the workspace and never through a
symbolic link (I/O).

An agent can replace ``PROMPT.md`` by a link to any file of the user's (``~/.ssh/id_ed25519``,
``/etc/passwd`` for a run as root) while a run is under way; ralph then must not change the
link's target. The file is opened with ``O_NOFOLLOW`` under its real parent directory, which
must lie inside the workspace, and changed through that descriptor only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline import PipelineError
from pipeline.events import Count, Instant, PromptFileProtected

__all__ = ["PromptPathError", "prompt_protected", "protect_prompt", "restore_prompt"]

_WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH


class PromptPathError(PipelineError, ValueError):
    """The prompt file is not a regular file inside the workspace (a link, a directory, ...)."""


@contextlib.contextmanager
def _opened(root: Path, path: Path) -> Iterator[int]:
    """A descriptor on the regular file ``path`` inside ``root``, the link itself never
    followed; :class:`PromptPathError` otherwise (``FileNotFoundError`` when it is gone)."""
    absolute = Path(os.path.abspath(path))
    parent = absolute.parent.resolve(strict=True)
    if not parent.is_relative_to(root.resolve()):
        raise PromptPathError(f"{path} is outside the workspace {root}: its mode is left alone")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY
    try:
        descriptor = os.open(parent / absolute.name, flags)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise PromptPathError(
                f"{path} is a symbolic link: ralph never changes permissions through a link"
            ) from error
        raise
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise PromptPathError(f"{path} is not a regular file: its mode is left alone")
        yield descriptor
    finally:
        os.close(descriptor)


def protect_prompt(root: Path, path: Path) -> int:
    """Make ``path`` read-only; returns the mode it had."""
    with _opened(root, path) as descriptor:
        mode = stat.S_IMODE(os.fstat(descriptor).st_mode)
        os.fchmod(descriptor, mode & ~_WRITE_BITS)
    return mode


def restore_prompt(root: Path, path: Path, mode: int) -> None:
    """Give ``path`` back ``mode``."""
    with _opened(root, path) as descriptor:
        os.fchmod(descriptor, mode)


def prompt_protected(
    root: Path, prompt: Path, earlier_mode: int | None, clock: Callable[[], Instant]
) -> PromptFileProtected | None:
    """Make a new run's prompt file inside the workspace read-only: the fact with the mode to
    give back at the end (``earlier_mode`` when an earlier run that never finished left it
    read-only), or None for a prompt file outside the workspace, which is the user's own and
    left alone. Raises :class:`PipelineError` when the prompt path is not a regular file."""
    if not prompt.parent.resolve().is_relative_to(root.resolve()):
        return None
    try:
        mode = protect_prompt(root, prompt)
    except PromptPathError as error:
        raise PipelineError(str(error)) from error
    given_back = mode if earlier_mode is None else earlier_mode
    return PromptFileProtected(path=str(prompt), original_mode=Count(given_back), at=clock())
