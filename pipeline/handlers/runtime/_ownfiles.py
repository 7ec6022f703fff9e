"""ralph's own files as an agent may have left them: reading and writing those under ``.agent/``,
and changing the prompt file's permissions, never through a symbolic link (I/O).

An agent can replace a report it writes (``.agent/out/status``) or a prompt ralph writes for it
(``.agent/prompts/development.md``) by a symbolic link to a file outside the workspace, a FIFO
or a directory. ralph reads a report only from a regular file reached through no link, so a
link to ``~/.ssh/id_ed25519`` is a rejected report, never a secret in the log. A prompt path
taken by something else is moved aside (a link removed, anything else renamed next to it), so
the prompt is written where ralph means to and the next resume does not stop on it again.

An agent can likewise replace ``PROMPT.md`` by a link to any file of the user's
(``~/.ssh/id_ed25519``, ``/etc/passwd`` for a run as root) while a run is under way; ralph then
must not change the link's target. The file is opened with ``O_NOFOLLOW`` under its real
parent directory, which must lie inside the workspace, and changed through that descriptor only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from pipeline import PipelineError
from pipeline.events import Count, Instant, PromptFileProtected
from pipeline.handlers.intake import UnsafeFileError, open_regular

__all__ = [
    "MAX_REPORT_BYTES",
    "PromptPathError",
    "empty_folder",
    "prompt_protected",
    "protect_prompt",
    "read_own",
    "remove_own",
    "restore_prompt",
    "write_own",
]


MAX_REPORT_BYTES: Final = 1 << 20
"""The most of a report ralph reads (1 MiB); a larger one is refused, not read whole."""


def read_own(path: Path) -> bytes:
    """The bytes of the regular file ``path``, opened through no link.

    Raises ``FileNotFoundError`` when it is missing, :class:`UnsafeFileError` for a link or a
    file that is not regular, ``ValueError`` when it is over :data:`MAX_REPORT_BYTES`.
    """
    fd = open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_REPORT_BYTES + 1)
    if len(data) > MAX_REPORT_BYTES:
        raise ValueError(f"{path} is over {MAX_REPORT_BYTES} bytes")
    return data


def _clear(path: Path, *, folder: bool) -> None:
    """Make room at ``path`` for a regular file (or, with ``folder``, a real directory)."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        path.unlink()
    elif not (stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)):
        # Not ours to delete: what the agent put there is kept, beside the path.
        path.rename(path.with_name(f"{path.name}.moved-{secrets.token_hex(4)}"))


def write_own(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` as a regular file, through no link: a link at the path or at
    its folder is removed first, and anything else in the way is moved aside."""
    _clear(path.parent, folder=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    _clear(path, folder=False)
    try:
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except UnsafeFileError:
        # Replaced again between the check and the open: move it once more, then insist.
        with contextlib.suppress(OSError):
            _clear(path, folder=False)
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    with os.fdopen(fd, "wb") as file:
        file.write(data)


def _own_folder(path: Path) -> int:
    """A descriptor of ``path`` as a real folder, reached through no link at its place: a link
    there is removed and anything else in the way moved aside (as :func:`write_own` does)
    before the folder is made."""
    _clear(path, folder=True)
    path.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def empty_folder(path: Path) -> None:
    """Make ``path`` an empty real folder, through no link: what is in it is removed (a link
    in it, not what it points to), and a link at its place removed or anything else in the
    way moved aside (as :func:`write_own` does) before the folder is made. Raises ``OSError``
    when a file in it cannot be removed.

    The folder itself is kept: removing it frees its block, which took 3-4 ms an invocation on
    the ext4 (mounted with ``discard``) the benchmarks run on, against 0.1 ms to empty it."""
    fd = _own_folder(path)
    try:
        with os.scandir(fd) as entries:
            inside = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for name, folder in inside:
            if folder:
                # Follows no link inside it either. A folder is no report: what of it cannot
                # be removed (an agent took its permissions away) is left.
                shutil.rmtree(name, dir_fd=fd, ignore_errors=True)
            else:
                os.unlink(name, dir_fd=fd)  # a report that cannot go must not count: raise
    finally:
        os.close(fd)


def remove_own(path: Path) -> None:
    """Remove the file ``path`` from its folder, through no link: a link at the folder's place
    is removed and the folder made (a correction turn keeps the role's report, so the folder
    is not emptied), and a link at ``path`` is removed, never what it points to."""
    fd = _own_folder(path.parent)
    try:
        os.unlink(path.name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


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
