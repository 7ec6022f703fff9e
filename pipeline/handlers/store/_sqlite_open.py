"""Opening the SQLite event store's file, and turning SQLite's and the disk's errors into the
store's (naming the file, telling a full disk, a damaged file and a read-only place apart).

A store opened to write is switched to write-ahead logging. One opened to read only is never
changed: it is read where it is, or, where nobody can write, as an immutable file or a private
copy of the file and its log.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import shutil
import sqlite3
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from pipeline.handlers.store._migrations import applied_migrations
from pipeline.handlers.store._port import StoreCorruptError, StoreError

__all__ = ["guard", "open_read_only", "open_to_write"]

_LOW_SPACE: Final = 1 << 20
"""Free bytes below which a failed write is put down to a full disk."""


def open_to_write(path: Path, synchronous: str) -> tuple[sqlite3.Connection, int]:
    """Open (or create) the store at ``path`` in write-ahead-log mode with ``synchronous``,
    and a descriptor of the file of its own; the schema is left as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    # An own descriptor of the file, to tell later whether the path still names it.
    fd = os.open(path, os.O_RDONLY)
    db.execute("PRAGMA busy_timeout=10000")
    _enter_wal(db)
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.execute("PRAGMA foreign_keys=ON")
    return db, fd


def open_read_only(
    path: Path,
) -> tuple[sqlite3.Connection, tempfile.TemporaryDirectory[str] | None, set[int]]:
    """Open for reading (SQLite's ``mode=ro``): the file is never changed, so a reader
    works on a store it may not write, and an old schema is read as it is. Returns the
    connection, the private copy it reads if any (to remove on closing), and the numbers of
    the migrations the store has.

    A reader of a write-ahead-logged file needs its ``-shm`` index, which SQLite creates
    beside the file; where it cannot (a read-only mount, a folder this user may not
    write) ``mode=ro`` fails. There, no writer can be at work either, so the file is opened
    ``immutable``, unless a ``-wal`` holds facts the file does not have yet (a writer
    stopped before its checkpoint): then a private copy of both is read instead."""
    try:
        db = _connect_read_only(path, "mode=ro")
        db.execute("PRAGMA busy_timeout=10000")
        return db, None, applied_migrations(db)
    except sqlite3.OperationalError as error:
        if "unable to open" not in str(error) or os.access(path.parent, os.W_OK):
            raise
        db, copy = _open_unwritable_place(path)
        return db, copy, applied_migrations(db)


@contextlib.contextmanager
def guard(path: Path, action: str) -> Iterator[None]:
    """Turn SQLite's and the disk's errors into the store's, naming the file at ``path``."""
    try:
        yield
    except StoreError:
        raise
    except UnicodeDecodeError as error:
        # Invalid UTF-8 in a stored text (the schema, a run id): damage, not a bug.
        raise StoreCorruptError(
            f"{path}: the event store is damaged (a stored text is not valid: "
            f"{error}); it was left untouched. Restore it from a backup, or move it aside "
            "to start afresh."
        ) from error
    except sqlite3.DatabaseError as error:
        message = str(error)
        full = _no_room(path) if "disk" in message else None
        if full is not None:
            raise StoreError(
                f"{path}: could not {action}: {full} ({message}); what was stored "
                "before stays; free space, then go on where it stopped (a run: ralph resume)"
            ) from error
        if (
            "malformed" in message
            or "not a database" in message
            or "corrupt" in message
            or "decode" in message
        ):
            raise StoreCorruptError(
                f"{path}: the event store is damaged ({message}); it was left "
                "untouched. Restore it from a backup, or move it aside to start afresh."
            ) from error
        if "readonly" in message or "read-only" in message or not _writable(path):
            raise StoreError(
                f"{path}: could not {action}: the store is read-only here (a read-only "
                f"mount, or a file or folder this user may not write: {message}); nothing "
                "was written. Readers (status, replay, events, report, runs) still work; "
                "to run, give a store that can be written (--store)."
            ) from error
        raise StoreError(f"{path}: could not {action}: {message}") from error
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
            raise StoreError(
                f"{path}: could not {action}: the disk is full ({error.strerror})"
            ) from error
        raise StoreError(f"{path}: could not {action}: {error}") from error


def _enter_wal(db: sqlite3.Connection) -> None:
    """Switch the file to write-ahead logging. While other processes are creating the same
    file, SQLite can answer "locked" at once without waiting for the busy timeout, so the
    switch is tried again for up to ten seconds."""
    deadline = time.monotonic() + 10.0
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _open_unwritable_place(
    path: Path,
) -> tuple[sqlite3.Connection, tempfile.TemporaryDirectory[str] | None]:
    """Open a store in a place nobody can write: as it is, or a copy with its log."""
    wal = path.with_name(path.name + "-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        return _connect_read_only(path, "immutable=1"), None
    folder = tempfile.TemporaryDirectory(prefix="ralph-store-")
    copy = Path(folder.name) / path.name
    shutil.copyfile(path, copy)
    shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
    return _connect_read_only(copy, "mode=ro"), folder


def _connect_read_only(path: Path, mode: str) -> sqlite3.Connection:
    uri = f"file:{urllib.parse.quote(str(path.absolute()))}?{mode}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)


def _no_room(path: Path) -> str | None:
    """Why the store's file cannot grow, when that is why a write failed (SQLite says
    "disk I/O error" when a file size limit stops it, "disk is full" for ENOSPC)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft != resource.RLIM_INFINITY:
        return f"the disk is full for this process: its file size limit is {soft} bytes"
    try:
        free = shutil.disk_usage(path.parent).free
    except OSError:
        return None
    if free < _LOW_SPACE:
        return f"the disk is full ({free} bytes free on {path.parent})"
    return None


def _writable(path: Path) -> bool:
    """Whether this process may write the store's file and its folder (SQLite writes
    its journal files beside it)."""
    folder = path.parent
    return os.access(folder, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))
