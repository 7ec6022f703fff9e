"""Which events file agents write to: the run's own, named by the marker (I/O: small files).

A fresh run gets ``.ralph/events-<run id>.jsonl`` (the run id starts with the UTC time, so the
files sort by age, and ends with random hex, so two runs in one second differ). The marker
``.ralph/current-events`` names it, relative to the workspace root. Stale lines from an earlier
run can never reach a new one, because the new run reads only its own file.

The marker is input like any other file an agent can touch. A path that is absolute, holds
``..``, is not directly in ``.ralph/`` or does not end in ``.jsonl`` is refused, so no agent can
redirect the engine's reads or writes. Neither are symbolic links followed: the marker and the
events file are opened with ``O_NOFOLLOW``, inside a folder opened with ``O_NOFOLLOW`` too, and
must be regular files (a FIFO would block a reader or a writer for ever; a directory or a
device is no events file).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pipeline import PipelineError

__all__ = [
    "FALLBACK_EVENTS",
    "MARKER",
    "EventsFileError",
    "UnsafeFileError",
    "card_path",
    "checked_events_path",
    "emit_target",
    "open_regular",
    "read_marker",
    "replace_whole",
    "workspace_root",
    "write_marker",
]

MARKER = ".ralph/current-events"
"""The marker file, relative to the workspace root."""

FALLBACK_EVENTS = ".ralph/events.jsonl"
"""Where ``ralph emit`` writes in a workspace without a marker, relative to its root (seed
003, AC5): no run's events file, so no run reads it; ``ralph emit`` says so."""

_MARKER_BYTES = 4096
"""More than any path the marker may name; a larger marker is not read whole."""


class EventsFileError(PipelineError, ValueError):
    """The events file cannot be found or the marker names a path it may not."""


class UnsafeFileError(EventsFileError):
    """A path ralph reads or appends to is a symbolic link, or no regular file."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a device or special file"


def _refusal(path: Path, error: OSError) -> UnsafeFileError | None:
    """The refusal an ``O_NOFOLLOW`` open's ``error`` means, or None for another error."""
    if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR):
        return None
    for candidate in (path, path.parent):
        try:
            mode = candidate.lstat().st_mode
        except OSError:
            continue
        if stat.S_ISLNK(mode) or (candidate == path and not stat.S_ISREG(mode)):
            return UnsafeFileError(
                f"{candidate} is {_kind(mode)}; ralph uses only a regular file there "
                "and follows no link"
            )
    return UnsafeFileError(f"{path} is no regular file in a real folder: {error.strerror}")


def _folder_of(path: Path) -> int:
    """A descriptor of ``path``'s folder, opened through no link in its last part
    (:class:`UnsafeFileError` for a link or no folder there)."""
    try:
        return os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        refusal = _refusal(path, error)
        if refusal is None:
            raise
        raise refusal from error


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """A descriptor of ``path`` opened with ``flags``, following no symbolic link in its last
    two parts, and only if it is a regular file (a FIFO or device is never waited on).

    Raises :class:`UnsafeFileError` for a link, a FIFO or another non-regular file (at either
    part), ``FileNotFoundError`` when it is missing, ``OSError`` otherwise.
    """
    folder = _folder_of(path)
    try:
        nofollow = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        fd = os.open(path.name, flags | nofollow, mode, dir_fd=folder)
    except OSError as error:
        refusal = _refusal(path, error)
        if refusal is not None:
            raise refusal from error
        raise
    finally:
        os.close(folder)
    kind = os.fstat(fd).st_mode
    if not stat.S_ISREG(kind):
        os.close(fd)
        raise UnsafeFileError(f"{path} is {_kind(kind)}; ralph uses only a regular file there")
    return fd


def card_path(root: Path, run: str) -> Path:
    """Where the card of ``run`` lives in the workspace at ``root``: what ralph's MCP server
    knows of the prompt (``pipeline.handlers.intake._card``)."""
    return root / ".ralph" / f"mcp-{run}.json"


def checked_events_path(text: str, source: str = MARKER) -> PurePosixPath:
    """``text`` as a relative events-file path, or :class:`EventsFileError` saying why not."""
    value = text.strip()
    path = PurePosixPath(value)
    if not value:
        raise EventsFileError(f"{source} is empty; it must name a .ralph/*.jsonl file")
    if path.is_absolute() or value.startswith("\\") or ":" in path.parts[0]:
        raise EventsFileError(f"{source} names an absolute path {value!r}; only .ralph/*.jsonl")
    if ".." in path.parts:
        raise EventsFileError(f"{source} names {value!r}, which climbs out with '..'")
    if len(path.parts) != 2 or path.parts[0] != ".ralph":
        raise EventsFileError(f"{source} names {value!r}, which is not directly in .ralph/")
    if path.suffix != ".jsonl":
        raise EventsFileError(f"{source} names {value!r}, which is not a .jsonl file")
    return path


def read_marker(root: Path) -> PurePosixPath | None:
    """The events file the marker under ``root`` names (None: no marker)."""
    marker = root / MARKER
    try:
        fd = open_regular(marker, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise EventsFileError(f"cannot read {marker}: {error.strerror}") from error
    try:
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(_MARKER_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise EventsFileError(f"cannot read {marker}: {error}") from error
    return checked_events_path(text, str(marker))


def replace_whole(path: Path, data: bytes) -> None:
    """Write ``data`` at ``path`` whole, then rename it into place (a reader sees the old file
    or the new, never half of one), through no link.

    The folder is opened with ``O_NOFOLLOW`` and the file written under a fresh random name
    with ``O_EXCL``, so nothing an agent planted can take the write elsewhere; a link at
    ``path`` is replaced by the rename, never followed. Raises ``OSError`` (a folder at
    ``path`` is left alone: ``IsADirectoryError``), or :class:`UnsafeFileError` when the
    folder is a link.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    folder = _folder_of(path)
    partial = f".{path.name}.{secrets.token_hex(4)}.tmp"
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            with os.fdopen(os.open(partial, flags, 0o644, dir_fd=folder), "wb") as handle:
                handle.write(data)
            os.replace(partial, path.name, src_dir_fd=folder, dst_dir_fd=folder)
        except OSError:
            # A full disk: no half-written file left behind.
            with contextlib.suppress(OSError):
                os.unlink(partial, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def write_marker(root: Path, events_file: Path) -> bool:
    """Point the marker under ``root`` at ``events_file`` (:func:`replace_whole`).

    False when it cannot be written: an agent put a directory there, say. That stops
    nothing: every agent of the run gets ``RALPH_EVENTS_FILE``, and the marker only serves a
    ``ralph emit`` run without it.
    """
    relative = events_file.relative_to(root).as_posix()
    checked_events_path(relative, "the events file")
    try:
        replace_whole(root / MARKER, (relative + "\n").encode())
    except OSError:
        return False
    return True


def workspace_root(start: Path, environ: Mapping[str, str]) -> Path | None:
    """``RALPH_WORKSPACE_ROOT``, else the nearest directory from ``start`` up holding
    ``.ralph/``; None when there is neither."""
    given = environ.get("RALPH_WORKSPACE_ROOT")
    if given:
        return Path(given)
    for folder in (start, *start.parents):
        if (folder / ".ralph").is_dir():
            return folder
    return None


def emit_target(start: Path, environ: Mapping[str, str]) -> tuple[Path, bool]:
    """Where ``ralph emit`` writes, and whether it is the fallback: ``RALPH_EVENTS_FILE``,
    else the file the marker under the workspace root names, else, in a workspace with no
    marker (no run has started there), :data:`FALLBACK_EVENTS` (True). Outside any
    workspace there is nowhere to write: :class:`EventsFileError`."""
    given = environ.get("RALPH_EVENTS_FILE")
    if given:
        return Path(given), False
    root = workspace_root(start, environ)
    if root is None:
        raise EventsFileError(
            f"no run to emit to: RALPH_EVENTS_FILE is not set and no folder from {start} up "
            "holds .ralph/ (agents of `ralph run` get RALPH_EVENTS_FILE)"
        )
    named = read_marker(root)
    if named is None:
        return root / FALLBACK_EVENTS, True
    return root / named, False
