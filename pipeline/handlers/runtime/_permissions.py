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
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import PipelineError

__all__ = ["PromptPathError", "protect_prompt", "restore_prompt"]

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
