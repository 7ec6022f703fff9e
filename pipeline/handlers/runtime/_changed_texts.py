"""The texts of changed files, read for the tamper screen: from git's objects and from the
work tree (I/O).

A text is what the screen's detectors read, or None: path-level detectors only. It is None
for a file over the size limit (a cut text would count tests wrongly), a binary file (a NUL
byte, git's own test) and anything in the work tree that is not a regular file reached
through no symbolic link (a link's target may lie outside the workspace: ``~/.aws``).
Bytes that are not UTF-8 are decoded as U+FFFD rather than making the whole file binary: a
Latin-1 test file still has its tests counted, since every marker the detectors look for is
ASCII, and the old and new texts are decoded alike, so equal bytes give equal texts.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, run_git_bytes

__all__ = ["blob_texts", "decoded", "worktree_text"]

_CHUNK: Final = 1 << 16

_UNREADABLE: Final = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO, errno.EACCES, errno.EPERM}
)
"""Why opening a listed path may fail that makes its text None rather than the screen fail:
it is gone, a folder on its way is a link or a file (``ENOTDIR``, ``ELOOP`` under
``O_NOFOLLOW``), the path itself is a link (``ELOOP``) or a socket (``ENXIO``), or the agent
took away the read permission (a screen that stops there would never finish)."""


def decoded(data: bytes, max_bytes: int) -> str | None:
    """``data`` as a text, or None when it is over ``max_bytes`` or binary (holds a NUL)."""
    if len(data) > max_bytes or b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _read_at_most(fd: int, limit: int) -> bytes:
    parts: list[bytes] = []
    size = 0
    while size <= limit:
        part = os.read(fd, min(_CHUNK, limit + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def worktree_text(root: Path, path: str, max_bytes: int) -> str | None:
    """The text of the work tree's file at ``path`` (git's ``/``-separated path from the
    top), opened through no symbolic link at any part of it, and read only when it is a
    regular file; None when it is not one, is gone, or its text is None (see
    :func:`decoded`). Raises ``OSError`` when a file that is there cannot be read."""
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    nofollow = os.O_NOFOLLOW | os.O_CLOEXEC
    folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | nofollow, dir_fd=folder)
            os.close(folder)
            folder = inner
        # O_NONBLOCK: a FIFO planted at the path is opened without waiting for a writer.
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | nofollow, dir_fd=folder)
    except OSError as error:
        if error.errno in _UNREADABLE:
            return None
        raise
    finally:
        os.close(folder)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return decoded(_read_at_most(fd, max_bytes), max_bytes)
    finally:
        os.close(fd)


def blob_texts(
    root: Path, names: Sequence[str], policy: GitPolicy, max_bytes: int
) -> tuple[str | None, ...]:
    """The texts of git objects named ``<rev>:<path>``, in order, read by one ``git cat-file
    --batch``; None for a name git does not find and for a text :func:`decoded` refuses.

    Blobs over ``max_bytes`` still pass through the pipe whole (``--batch`` has no limit):
    memory is bounded by the caller's file limit times the largest old file.
    """
    if not names:
        return ()
    # -z only when a path holds a newline: older gits do not know it.
    nul = any("\n" in name for name in names)
    end = b"\0" if nul else b"\n"
    wanted = [os.fsencode(name) for name in names]
    done = run_git_bytes(
        root,
        "cat-file",
        "--batch",
        *(("-z",) if nul else ()),
        policy=policy,
        input_bytes=b"".join(name + end for name in wanted),
    )
    out = done.stdout
    texts: list[str | None] = []
    at = 0
    for name in wanted:
        # A name git cannot resolve comes back as ``NAME missing`` (or ``ambiguous``).
        unresolved = next(
            (n for n in (b" missing\n", b" ambiguous\n") if out.startswith(name + n, at)), None
        )
        if unresolved is not None:
            texts.append(None)
            at += len(name) + len(unresolved)
            continue
        newline = out.find(b"\n", at)
        header = out[at:newline].split(b" ") if newline >= 0 else []
        if len(header) != 3 or not header[2].isdigit():
            raise GitError(f"git cat-file --batch: unexpected answer for {os.fsdecode(name)!r}")
        size = int(header[2])
        start = newline + 1
        blob = out[start : start + size]
        texts.append(decoded(blob, max_bytes) if header[1] == b"blob" else None)
        at = start + size + 1
    return tuple(texts)
