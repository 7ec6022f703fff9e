"""Reading and writing ralph's own files under ``.agent/`` as an agent may have left them (I/O).

An agent can replace a report it writes (``.agent/out/status``) or a prompt ralph writes for it
(``.agent/prompts/development.md``) by a symbolic link to a file outside the workspace, a FIFO
or a directory. ralph reads a report only from a regular file reached through no link, so a
link to ``~/.ssh/id_ed25519`` is a rejected report, never a secret in the log. A prompt path
taken by something else is moved aside (a link removed, anything else renamed next to it), so
the prompt is written where ralph means to and the next resume does not stop on it again.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Final

from pipeline.handlers.intake import UnsafeFileError, open_regular

__all__ = ["MAX_REPORT_BYTES", "read_own", "write_own"]

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
