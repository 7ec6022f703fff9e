"""Keeping the repository's git configuration, hooks and ``info/``, and the agent CLIs' project
settings, as the run found them (I/O).

With the sandbox on, agents see the whole git folder read-only and this finds nothing to put
back; it is what keeps the person's git as it was where the sandbox is off.

ralph's own git commands read ``.git/config`` (and what it includes), ``.git/hooks/`` and
``.git/info/`` (the exclude and attributes files): an agent that changes them can change what
ralph's commits contain or run its code in them. The agent CLIs' project settings (each preset's
``workspace_code``: ``.mcp.json``, ``opencode.json``, ``.codex``, ``.gemini``, ...) name MCP
servers and hooks that the next invocation and the person's own CLI start: the sandbox binds
them read-only where they exist, and one an agent plants where none was is removed here, so it
reaches neither a commit nor the next invocation. With the sandbox on, the protected paths
(``.vscode``, ``.idea``, ``.gitmodules``, shell start-up files, ``[sandbox] protect``) are kept
likewise: the sandbox binds them read-only where they exist, and one an agent (or a gate, a
hook) creates where none was as the invocation started is removed here, so that a new
``.vscode/tasks.json`` (run when the folder is opened) reaches no commit; with the sandbox off
they are the agent's like any other file (their protection is the sandbox's). A repository an
agent makes inside the work tree (``git init nested``: a ``.git`` folder, file or link below the
top that was not there as the invocation started) is removed too, sandbox or not: once
committed as a gitlink, the person's own ``git status`` asks it whether it is dirty by a
``git status`` in it that runs the filters its configuration names. The work tree's own
``.git`` and a submodule's, there from the start, are never touched.
:class:`GitGuard` takes a snapshot when the run
(or a resumed run) starts and, after every agent invocation and before ralph's git runs, tells
what differs and puts the snapshot back. Checking reads only ``stat`` results (a file's bytes
only when its ``stat`` changed), and runs no process: it happens after every invocation.

Writing back never follows a symlink: whatever lies at a path is removed first, then the
snapshot's file, folder or link is made anew.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Mapping
from pathlib import Path

from attrs import define, field, frozen

from pipeline.core.agents import workspace_code
from pipeline.core.sandbox import DEFAULT_PROTECT
from pipeline.events import GitMetadataRestored, Instant, WorkspaceErrorKind
from pipeline.handlers.runtime._io import Facts, facts_or_io_error
from pipeline.handlers.runtime._layout import git_dirs

__all__ = ["GitGuard", "restored"]

_MAX_FILE_BYTES = 4 * 1024 * 1024
"""A larger file under the guarded paths is not kept in the snapshot (restoring removes it)."""


@frozen(kw_only=True)
class _Entry:
    """One path as the snapshot holds it."""

    kind: str  # "file", "dir" or "link"
    mode: int
    data: bytes  # the file's bytes, or the link's target


Signature = tuple[int, int, int, int]
"""(mode, size, mtime_ns, inode) of a path: equal signatures need no closer look."""


def _signature(info: os.stat_result) -> Signature:
    return (info.st_mode, info.st_size, info.st_mtime_ns, info.st_ino)


def _walk(roots: tuple[Path, ...]) -> dict[Path, os.stat_result]:
    """Every path under ``roots`` (each a file, a folder or a link), never following links."""
    found: dict[Path, os.stat_result] = {}
    pending = list(roots)
    while pending:
        path = pending.pop()
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        found[path] = info
        if stat.S_ISDIR(info.st_mode):
            try:
                with os.scandir(path) as entries:
                    pending.extend(Path(entry.path) for entry in entries)
            except OSError:
                continue
    return found


def _repositories(root: Path) -> frozenset[Path]:
    """Every ``.git`` (a folder, a file or a link) below the work tree ``root``'s top, never
    following a link nor looking inside a ``.git``: the repositories inside the work tree."""
    found: set[Path] = set()
    pending = [str(root)]
    while pending:
        try:
            with os.scandir(pending.pop()) as entries:
                for entry in entries:
                    if entry.name == ".git":
                        found.add(Path(entry.path))
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
        except OSError:
            continue
    found.discard(root / ".git")
    return frozenset(found)


def _folder_unlinked(path: Path, root: Path) -> bool:
    """Whether the folder ``path`` lies in is reached from the work tree ``root`` through no
    link (``path`` itself may be one: it is what is removed or put back)."""
    below = os.path.relpath(path.parent, root)
    top = os.path.realpath(root)
    return os.path.realpath(path.parent) == os.path.normpath(os.path.join(top, below))


def _gitfile(path: Path) -> _Entry | None:
    """The ``.git`` file at ``path`` (a submodule's pointer to its git folder), or None where
    there is none (a folder, a link, nothing)."""
    try:
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    try:
        return _read(path, info)
    except OSError:
        return None


def _read(path: Path, info: os.stat_result) -> _Entry | None:
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        return _Entry(kind="link", mode=mode, data=os.fsencode(os.readlink(path)))
    if stat.S_ISDIR(info.st_mode):
        return _Entry(kind="dir", mode=mode, data=b"")
    if stat.S_ISREG(info.st_mode) and info.st_size <= _MAX_FILE_BYTES:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return _Entry(kind="file", mode=mode, data=handle.read(_MAX_FILE_BYTES + 1))
    return None  # a FIFO, a device, a huge file: never part of what the run found


def _remove(path: Path) -> None:
    """Remove whatever is at ``path`` (a folder with what is in it), following no link."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        shutil.rmtree(path)  # rmtree does not follow symlinks inside the folder
    else:
        path.unlink()


def _make(path: Path, entry: _Entry) -> None:
    """Make ``entry`` at ``path`` anew (nothing may be there)."""
    if entry.kind == "dir":
        path.mkdir(mode=entry.mode)
        path.chmod(entry.mode)
    elif entry.kind == "link":
        os.symlink(os.fsdecode(entry.data), path)
    else:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        fd = os.open(path, flags, entry.mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(entry.data)
        os.chmod(path, entry.mode)


@define(kw_only=True)
class GitGuard:
    """The snapshot of a repository's git configuration, hooks and ``info/`` and of the agent
    CLIs' project settings, and the means to find and undo changes to them."""

    root: Path
    """The workspace: paths under it are reported relative to it."""
    roots: tuple[Path, ...]
    """The guarded paths: the common directory's ``config``, ``config.worktree``, ``hooks``,
    ``info`` and ``commondir``, the worktree's ``config.worktree``, ``commondir`` and
    ``gitdir``, a ``.git`` file, and the workspace's ``workspace_code`` paths."""
    entries: dict[Path, _Entry]
    signatures: dict[Path, Signature]
    protected: tuple[Path, ...] = ()
    """The protected paths the sandbox binds read-only where they exist (none with the
    sandbox off): one that appears where none was is removed; one that was there is the
    sandbox's to keep, never put back from here (it may be the person's, changed meanwhile)."""
    present: frozenset[Path] = frozenset()
    """Those of ``protected`` that were there as the last invocation started."""
    repositories: Mapping[Path, _Entry | None] = field(factory=dict)
    """The ``.git`` entries below the work tree's top as the last invocation started (a
    submodule's, a person's own clone): one that appears besides is the agent's, removed. A
    submodule's ``.git`` file (its ``gitdir:`` line) is kept as it was, and put back when it
    changed: pointed at a folder of the agent's, the person's ``git status`` would read that
    folder's configuration."""

    @classmethod
    def take(cls, root: Path, protect: tuple[str, ...] | None = None) -> GitGuard | None:
        """The snapshot of the repository ``root`` lies in (None outside one); ``protect``:
        the sandbox's protected paths besides :data:`DEFAULT_PROTECT` (None: the sandbox is
        off, and no protected path is kept)."""
        dirs = git_dirs(root)
        if dirs is None:
            return None
        git_dir, common = dirs
        # ``commondir`` and ``gitdir`` decide where git looks for all the rest: a main
        # repository has no ``commondir``, and one that appears is removed again.
        names = ("config", "config.worktree", "hooks", "info", "commondir")
        roots = [common / name for name in names]
        if git_dir != common:
            roots += [git_dir / name for name in ("config.worktree", "commondir", "gitdir")]
        dot_git = root / ".git"
        if dot_git.is_file() and not dot_git.is_symlink():
            roots.append(dot_git)  # a worktree's pointer to its git directory
        roots += [root / path for path in workspace_code()]
        protected = () if protect is None else (*DEFAULT_PROTECT, *protect)
        guard = cls(
            root=root,
            roots=tuple(roots),
            entries={},
            signatures={},
            protected=tuple(dict.fromkeys(root / path for path in protected)),
        )
        guard.refresh()
        return guard

    def began(self) -> None:
        """Note which protected paths and repositories inside the work tree are there as an
        invocation starts: only one that is not is the agent's making."""
        self.present = frozenset(p for p in self.protected if os.path.lexists(p))
        self.repositories = {path: _gitfile(path) for path in _repositories(self.root)}

    def refresh(self) -> None:
        """Take the snapshot again, from what is there now (after ralph itself wrote there)."""
        found = _walk(self.roots)
        entries: dict[Path, _Entry] = {}
        for path, info in found.items():
            entry = _read(path, info)
            if entry is not None:
                entries[path] = entry
        self.entries = entries
        self.signatures = {path: _signature(found[path]) for path in entries}
        self.began()

    def _made(self) -> list[Path]:
        """The protected paths that are there now and were not as the invocation started,
        but for one behind a link below the work tree (never removed through it: the link
        itself is what a commit would take); the repositories likewise, and a submodule's
        ``.git`` file that changed (one whose folder is gone or a link is left alone)."""
        made = [
            path
            for path in self.protected
            if path not in self.present
            and os.path.lexists(path)
            and _folder_unlinked(path, self.root)
        ]
        made += sorted(_repositories(self.root) - set(self.repositories))
        for path, kept in self.repositories.items():
            if kept is None or _gitfile(path) == kept:
                continue
            if _folder_unlinked(path, self.root) and os.path.isdir(path.parent):
                made.append(path)  # a submodule's pointer changed: put back
        return made

    def changed(self) -> tuple[Path, ...]:
        """The guarded paths that differ from the snapshot: added, removed or changed; and
        the protected paths and repositories made since the invocation started."""
        made = self._made()
        found = _walk(self.roots)
        current = {path: _signature(info) for path, info in found.items()}
        if current == self.signatures:
            return tuple(made)
        differ: list[Path] = []
        for path in sorted(set(current) | set(self.entries)):
            if current.get(path) == self.signatures.get(path):
                continue
            kept = self.entries.get(path)
            info = found.get(path)
            try:
                now = None if info is None else _read(path, info)
            except OSError:
                now = None
            if kept is None or now != kept:
                differ.append(path)
        return tuple(dict.fromkeys((*differ, *made)))

    def restore(self, paths: tuple[Path, ...]) -> None:
        """Put ``paths`` back as the snapshot has them (removing those it does not have)."""
        ordered = sorted(paths, key=lambda p: len(p.parts))
        # Parents first: once a folder (or a link put where one was) is gone, nothing under it
        # is looked at through it, so no removal can follow a link out of the repository.
        for path in ordered:
            _remove(path)
        kept = sorted(self.entries, key=lambda p: len(p.parts))
        for path in ordered:
            entry = self.entries.get(path) or self.repositories.get(path)
            if entry is None or os.path.lexists(path):
                continue
            _make(path, entry)
            if entry.kind == "dir":
                # What the folder held went with it: make that again too.
                for inner in kept:
                    if path in inner.parents and not os.path.lexists(inner):
                        _make(inner, self.entries[inner])
        found = _walk(self.roots)
        self.signatures = {p: _signature(found[p]) for p in self.entries if p in found}

    def undo(self) -> tuple[str, ...]:
        """Find what differs, put it back, and say which paths those were (none: nothing did)."""
        differ = self.changed()
        if not differ:
            return ()
        self.restore(differ)
        return tuple(self._shown(path) for path in differ)

    def _shown(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def restored(guard: GitGuard | None, clock: Callable[[], Instant]) -> Facts:
    """``GitMetadataRestored`` when an agent changed what ``guard`` keeps (the repository's
    git configuration, hooks or ``info/``; all put back as the run found them), nothing when
    it did not (or outside git), a ``WorkspaceIoError`` when putting back failed."""
    if guard is None:
        return ()

    def undo() -> Facts:
        undone = guard.undo()
        return (GitMetadataRestored(paths=undone, at=clock()),) if undone else ()

    write = WorkspaceErrorKind.WRITE
    return facts_or_io_error(undo, write, ".git", clock, "cannot restore: ")
