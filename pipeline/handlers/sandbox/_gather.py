"""The host's side of the mount plan: the paths the pure plan needs, looked up on this machine,
and the sources it binds made when missing (I/O).

Everything here resolves links first (bwrap binds what a path points at, and the plan
compares paths), and nothing here decides what is shown: that is
:func:`pipeline.core.sandbox.mount_plan`'s job.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
from collections.abc import Iterable, Mapping
from os.path import realpath
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import DENY_LIST, Hidden, PresetPaths, empty_form, expand_home

__all__ = [
    "existing_hidden",
    "host_sockets",
    "interpreter_dirs",
    "linked_paths",
    "make_missing",
    "other_repositories",
    "program_dirs",
    "submodule_git_dirs",
    "worktree_folders",
]


_NOT_MADE: Final = frozenset({errno.EEXIST, errno.EACCES, errno.EPERM, errno.EROFS})
"""Why an entry of a CLI's folder is left unmade: something is there already (a link too),
or the folder cannot be written (by the agent either)."""

_PACKAGE: Final = Path(__file__).resolve().parents[2]
"""The ``pipeline`` package's folder: in the venv, or, installed editable, in its checkout."""


def interpreter_dirs(workspace: Path | None) -> tuple[str, ...]:
    """ralph's own interpreter: its installation and its environment (a venv's packages,
    ``ralph`` itself), which sandboxed processes run (``ralph emit``, the relay), and the
    ``pipeline`` package where an editable install keeps it outside the venv (in a checkout
    under ``$HOME`` or ``/tmp``, hidden otherwise); not when it lies in ``workspace``, which
    shows it already (and an agent working on ralph itself must be able to change it);
    ``workspace`` None: no workspace is shown."""
    found = [realpath(sys.base_prefix), realpath(sys.prefix)]
    package = realpath(_PACKAGE)
    shown = (*found, *(() if workspace is None else (realpath(workspace),)))
    if not any(Path(package).is_relative_to(p) for p in shown):
        found.append(package)
    return tuple(dict.fromkeys(found))


def _root_of(program: str) -> str:
    """What of an agent program must be seen whole: the folder holding its ``node_modules`` (an
    npm CLI), its venv (a Python one), else the program file alone (its folder may hold
    anything: other repositories, the person's files)."""
    parts = Path(program).parts
    if "node_modules" in parts:
        return str(Path(*parts[: parts.index("node_modules")]))
    for folder in Path(program).parents:
        if (folder / "pyvenv.cfg").is_file():
            return str(folder)
    return program


def program_dirs(argv0: str, environ: Mapping[str, str], workspace: Path) -> tuple[str, ...]:
    """The folders the agent program ``argv0`` runs from, both as named on ``PATH`` (a link's
    folder) and as its link resolves; none for a program that is not found (bwrap then says
    so, as the program itself would)."""
    found = shutil.which(argv0, path=environ.get("PATH", os.defpath))
    if found is None and "/" in argv0:
        found = str(workspace / argv0)
    if found is None or not os.path.exists(found):
        return ()
    named = os.path.abspath(found)
    # As named on PATH (a link in node_modules/.bin) and as the link resolves.
    return tuple(dict.fromkeys((_root_of(realpath(named)), _root_of(named))))


def existing_hidden(home: str, hide: Iterable[str]) -> tuple[Hidden, ...]:
    """The deny list and ``hide`` entries that exist here (a missing one needs no cover), each
    with whether it is a folder."""
    found: list[Hidden] = []
    for entry in (*DENY_LIST, *hide):
        path = expand_home(entry, home)
        with contextlib.suppress(OSError):
            is_dir = Path(path).is_dir()
            if os.path.lexists(path):
                found.append(Hidden(path=realpath(path), is_dir=is_dir))
    return tuple(dict.fromkeys(found))


def _is_repository(folder: Path) -> bool:
    """Whether ``folder`` holds a ``.git`` or is a bare repository (a ``HEAD`` file beside
    ``objects/`` and ``refs/``, as git itself recognises one): a worker's bare cache beside
    the tickets' folders holds every branch it fetched."""
    if (folder / ".git").exists():
        return True
    return (
        (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()
    )


def other_repositories(workspace: Path, common_dir: Path | None) -> tuple[str, ...]:
    """Siblings of the workspace that are repositories (a ``.git`` in them, or bare), with
    the folder of ralph's worktrees beside each (``<repository>-worktrees``, where its runs
    and its landings' scratch worktrees are), and the main work tree of a linked worktree
    (the common git directory's parent), all resolved."""
    found: list[str] = []
    parent = workspace.parent
    with contextlib.suppress(OSError):
        for sibling in parent.iterdir():
            if sibling != workspace and _is_repository(sibling):
                found.append(realpath(sibling))
                # Another remote ticket's landing replays its branch in there.
                worktrees = parent / f"{sibling.name}-worktrees"
                if worktrees != workspace and worktrees.is_dir():
                    found.append(realpath(worktrees))
    if common_dir is not None and common_dir.name == ".git":
        main = common_dir.parent
        if realpath(main) != realpath(workspace):
            found.append(realpath(main))
    return tuple(dict.fromkeys(found))


def linked_paths(paths: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    """Of ``paths`` (each a folder and an absolute path in it), those a link leads through
    below their folder (the path itself, or a folder on the way, is one, dangling too); a
    link at the folder itself is the person's and counts for nothing."""
    return tuple(
        path
        for folder, path in paths
        if realpath(path) != os.path.join(realpath(folder), os.path.relpath(path, folder))
    )


def host_sockets() -> tuple[str, ...]:
    """Every unix socket bound to a path on this machine (the kernel's own list, so none is
    missed wherever it lies), resolved, that still exists as a socket.

    A read-only bind does not stop ``connect()``: a socket left visible in a system folder
    would answer from inside. Covering each one the kernel knows of is the construction;
    abstract sockets need nothing (the sandbox has a network namespace of its own), and a
    socket bound after the sandbox starts is not covered (said in sandbox.md).
    """
    try:
        lines = Path("/proc/net/unix").read_text("utf-8", "replace").splitlines()[1:]
    except OSError:
        return ()
    found: list[str] = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue  # unnamed or abstract
        with contextlib.suppress(OSError):
            path = realpath(fields[7])
            if stat.S_ISSOCK(os.lstat(path).st_mode):
                found.append(path)
    return tuple(dict.fromkeys(found))


def worktree_folders(common_dir: Path | None) -> tuple[str, ...]:
    """The folder of the runs' worktrees beside the main work tree (``<main>-worktrees``,
    where ``ralph run --worktree`` puts them), resolved, where it exists."""
    if common_dir is None or common_dir.name != ".git":
        return ()
    main = common_dir.parent
    folder = main.parent / f"{main.name}-worktrees"
    return (realpath(folder),) if folder.is_dir() else ()


def submodule_git_dirs(common_dir: Path | None) -> tuple[str, ...]:
    """The git directories of the repository's submodules (``.git/modules/NAME``)."""
    if common_dir is None:
        return ()
    modules = common_dir / "modules"
    with contextlib.suppress(OSError):
        return tuple(realpath(m) for m in sorted(modules.iterdir()) if (m / "config").is_file())
    return ()


def make_missing(folders: Iterable[Path], files: Iterable[Path], preset: PresetPaths) -> None:
    """Create what the sandbox binds and must find: ``folders`` (git's hooks and info, the
    marker's folder), ``files`` (the run's events file) and the agent CLI's own folders
    (``0700``: they hold its credentials) with the entries bound read-only on top of them. A
    missing source would fail bwrap, or, bound as optional, leave a place the agent could
    create what ralph meant to keep read-only."""
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.touch(exist_ok=True)
    for writable in preset.writable:
        Path(writable).mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in preset.read_only:
        parent, name = os.path.split(path)
        if parent in preset.writable:
            _make_empty(parent, name)


def _make_empty(folder: str, name: str) -> None:
    """Make the read-only entry ``name`` of a CLI's writable folder, when missing, in its
    :func:`~pipeline.core.sandbox.empty_form`. Bound only where it exists, a missing one would
    be the agent's to make in the person's own folder (a hook their next unsandboxed session
    runs); made, it is a mount point the agent cannot replace. Nothing at the place is
    followed or changed: a link there stays (the plan binds no link), a file stays. A folder
    ralph cannot write is one the agent, with the same uid, cannot write either."""
    form = empty_form(name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            if form is None:
                os.mkdir(name, 0o700, dir_fd=fd)
                return
            made = os.open(name, flags, 0o600, dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as error:
        if error.errno in _NOT_MADE:
            return
        raise
    with os.fdopen(made, "wb") as file:
        file.write(form)
