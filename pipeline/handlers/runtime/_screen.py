"""The tamper screen's change set gathered from git and the work tree (I/O; the run's screen,
:mod:`._screening`, is its user).

:func:`gather_changes` lists what changed from a base commit to the work tree: the commits an
agent made itself, staged and unstaged changes (``git diff <base>``, renames found), and
untracked files that are not ignored (as added); it reads the old texts through one ``git
cat-file --batch`` and the new ones from the work tree. ralph's own folders, the kept-out
paths and agent CLIs' droppings are left out by the pathspecs the commit handler uses
(:func:`._git.own_pathspecs`). The result goes to :func:`pipeline.core.screening.screen`,
``Gathered.dirty`` to :func:`pipeline.core.screening.tree_dirty`. Git runs through
:func:`._gitcmd.run_git_bytes` only.

A text is what the screen's detectors read, or None: path-level detectors only. It is None
for a file over the size limit (a cut text would count tests wrongly), a binary file (a NUL
byte, git's own test) and anything in the work tree that is not a regular file reached
through no symbolic link (a link's target may lie outside the workspace: ``~/.aws``).
Bytes that are not UTF-8 are decoded as U+FFFD rather than making the whole file binary: a
Latin-1 test file still has its tests counted, since every marker the detectors look for is
ASCII, and the old and new texts are decoded alike, so equal bytes give equal texts.

A **baseline** holds the texts of ``ralph.toml`` and the prompt file when they were untracked
as the run started (``ralph init`` leaves them so): git cannot say what such a file was, so
it is judged against its baseline text, whatever git says about it now (see
:func:`gather_changes`).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Final, final

import attrs
from attrs import frozen

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    StatusEntry,
    parse_name_status,
    parse_porcelain,
)
from pipeline.handlers.runtime._git import own_pathspecs
from pipeline.handlers.runtime._gitcmd import GitError, GitPolicy, run_git_bytes

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "Gathered",
    "gather_changes",
    "untracked_baseline",
]

MAX_FILES: Final = 5000
"""How many changed paths a screen reads; past them it stops (``Gathered.incomplete``)."""

MAX_FILE_BYTES: Final = 1 << 20
"""The most of one file a screen reads (1 MiB); a larger file has no text."""

_NO_BASELINE: Final[Mapping[str, str]] = MappingProxyType({})

_UNREADABLE: Final = frozenset(
    {errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.ENXIO, errno.EACCES, errno.EPERM}
)
"""Why opening a listed path may fail that makes its text None rather than the screen fail:
it is gone, a folder on its way is a link or a file (``ENOTDIR``, ``ELOOP`` under
``O_NOFOLLOW``), the path itself is a link (``ELOOP``) or a socket (``ENXIO``), or the agent
took away the read permission (a screen that stops there would never finish)."""


def _as_text(data: bytes, max_bytes: int) -> str | None:
    """``data`` as a text, or None when it is over ``max_bytes`` or binary (holds a NUL)."""
    if len(data) > max_bytes or b"\0" in data:
        return None
    return data.decode("utf-8", "replace")


def _worktree_text(root: Path, path: str, max_bytes: int) -> str | None:
    """The text of the work tree's file at ``path`` (git's ``/``-separated path from the
    top), opened through no symbolic link at any part of it, and read only when it is a
    regular file; None when it is not one, is gone, or its text is None (see
    :func:`_as_text`). Raises ``OSError`` when a file that is there cannot be read."""
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
        with os.fdopen(fd, "rb", closefd=False) as opened:
            # One byte past the limit tells a file over it from one just at it.
            return _as_text(opened.read(max_bytes + 1), max_bytes)
    finally:
        os.close(fd)


def _blob_texts(
    root: Path, names: Sequence[str], policy: GitPolicy, max_bytes: int
) -> tuple[str | None, ...]:
    """The texts of git objects named ``<rev>:<path>``, in order, read by one ``git cat-file
    --batch``; None for a name git does not find and for a text :func:`_as_text` refuses.

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
        texts.append(_as_text(blob, max_bytes) if header[1] == b"blob" else None)
        at = start + size + 1
    return tuple(texts)


@final
@frozen(kw_only=True)
class Gathered:
    """A change set as the screen reads it, and the work tree's uncommitted paths.

    ``changes`` are sorted by path; ``incomplete``: more paths changed than were read (the
    first ones by path were); ``dirty``: what ``git status`` shows, less the excluded and the
    baseline paths, for :func:`pipeline.core.screening.tree_dirty`.
    """

    changes: tuple[FileChange, ...]
    incomplete: bool
    dirty: tuple[StatusEntry, ...]


def _listed(output: bytes) -> list[str]:
    return [field for field in _decoded(output).split("\0") if field]


def _decoded(output: bytes) -> str:
    # git writes paths as raw bytes: fsdecode turns bytes that are not UTF-8 into surrogate
    # escapes, which os.open turns back, so such a file can still be read.
    return os.fsdecode(output)


def _empty_tree(root: Path, policy: GitPolicy) -> str:
    """The empty tree's id in this repository's hash (``4b825dc...`` with SHA-1)."""
    done = run_git_bytes(
        root, "hash-object", "-t", "tree", "--stdin", policy=policy, input_bytes=b""
    )
    return done.stdout.decode("ascii").strip()


def _tracked_changes(
    root: Path, base: str, policy: GitPolicy, excludes: tuple[str, ...]
) -> tuple[FileChange, ...]:
    done = run_git_bytes(
        root,
        "diff",
        "--name-status",
        "-z",
        "-M",
        "--no-color",
        "--ignore-submodules",
        "--end-of-options",
        base,
        "--",
        ".",
        *excludes,
        policy=policy,
    )
    return parse_name_status(_decoded(done.stdout))


def _untracked_paths(root: Path, policy: GitPolicy, excludes: Sequence[str]) -> list[str]:
    """The untracked paths git does not ignore, less ``excludes`` (pathspecs)."""
    done = run_git_bytes(
        root,
        "ls-files",
        "--others",
        "--exclude-standard",
        "-z",
        "--",
        ".",
        *excludes,
        policy=policy,
    )
    # An embedded repository is listed as ``dir/``: a change whose path has no text.
    return [path.rstrip("/") for path in _listed(done.stdout)]


def _dirty(root: Path, policy: GitPolicy, excludes: tuple[str, ...]) -> tuple[StatusEntry, ...]:
    done = run_git_bytes(
        root,
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        # A staged rename is two dirty paths: its source is gone from the commit too.
        "--no-renames",
        "--",
        ".",
        *excludes,
        policy=policy,
    )
    return parse_porcelain(_decoded(done.stdout))


def _against_baseline(
    root: Path, baseline: Mapping[str, str], max_bytes: int
) -> Iterable[FileChange]:
    """Each baseline path the work tree no longer holds as it was."""
    for path, before in baseline.items():
        gone = not os.path.lexists(root / path)
        now = None if gone else _worktree_text(root, path, max_bytes)
        if gone or now != before:
            status = ChangeStatus.DELETED if gone else ChangeStatus.MODIFIED
            yield FileChange(path=path, old_path=None, status=status, old_text=before, new_text=now)


def _with_texts(
    root: Path, base: str, changes: list[FileChange], policy: GitPolicy, max_bytes: int
) -> list[FileChange]:
    """``changes`` as git listed them, with their old texts from ``base`` and their new ones
    from the work tree."""
    had_old = [i for i, c in enumerate(changes) if c.status is not ChangeStatus.ADDED]
    names = [f"{base}:{changes[i].before}" for i in had_old]
    old = dict(zip(had_old, _blob_texts(root, names, policy, max_bytes), strict=False))
    return [
        attrs.evolve(
            c,
            old_text=old.get(i),
            new_text=None
            if c.status is ChangeStatus.DELETED
            else _worktree_text(root, c.path, max_bytes),
        )
        for i, c in enumerate(changes)
    ]


def gather_changes(
    root: Path,
    base: str | None,
    *,
    policy: GitPolicy,
    excludes: Sequence[str],
    baseline: Mapping[str, str] = _NO_BASELINE,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_FILE_BYTES,
) -> Gathered:
    """What changed in the repository at ``root`` from the commit ``base`` (None: the empty
    tree) to the work tree, and what ``git status`` shows there.

    ``excludes``: paths (relative to the top, a file or a folder) left out besides ralph's own
    folders, as :class:`._git.GitHandler`'s ``keep_out``. ``baseline``: path -> text of files
    that were untracked when the run started (see :func:`untracked_baseline`). Such a path is
    judged against that text whatever git says of it now: the same text is no change, another
    is ``MODIFIED`` (the baseline as old text), a path gone is ``DELETED``; it is never dirty.
    git is asked about everything but the baseline's paths, so a rename into or out of one
    keeps only its other side (deleted or added).
    Past ``max_files`` changed paths (in path order) the rest are left unread and
    ``incomplete`` is set. Raises ``GitError`` when a git command fails, ``OSError`` when a
    file that is there cannot be read.
    """
    specs = own_pathspecs((*excludes, *baseline))
    since = base if base is not None else _empty_tree(root, policy)
    untracked = (
        FileChange(
            path=path, old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=None
        )
        for path in _untracked_paths(root, policy, specs)
    )
    listed = [*_tracked_changes(root, since, policy, specs), *untracked]
    # (change, whether its texts are still to read): the baseline's are read already.
    entries = [(c, True) for c in listed]
    entries += [(c, False) for c in _against_baseline(root, baseline, max_bytes)]
    entries.sort(key=lambda entry: (entry[0].path, entry[0].before))
    chosen = entries[:max_files]
    read = iter(_with_texts(root, since, [c for c, unread in chosen if unread], policy, max_bytes))
    changes = tuple(next(read) if unread else c for c, unread in chosen)
    return Gathered(
        changes=changes,
        incomplete=len(entries) > max_files,
        dirty=_dirty(root, policy, specs),
    )


def untracked_baseline(root: Path, paths: Iterable[str], policy: GitPolicy) -> dict[str, str]:
    """The texts of those ``paths`` (relative to the top) that git does not track now, read
    as the screen reads them, for :func:`gather_changes`'s ``baseline``: the runtime keeps
    them when a run starts. Ignored files count as untracked. A path that is missing, not a
    regular file or has no text (binary, too large) is left out: while it stays so, an
    untracked one shows as added. Raises ``GitError`` when git fails."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return {}
    done = run_git_bytes(
        root, "ls-files", "-z", "--", *(f":(literal){p}" for p in wanted), policy=policy
    )
    tracked = set(_listed(done.stdout))
    found: dict[str, str] = {}
    for path in wanted:
        if path in tracked:
            continue
        text = _worktree_text(root, path, MAX_FILE_BYTES)
        if text is not None:
            found[path] = text
    return found
