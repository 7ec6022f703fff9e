"""What a new git worktree of a workspace needs that git does not carry (I/O: git and files),
for ``ralph fork``, ``ralph run --worktree`` and a remote ticket's repository on a worker's
host: the configuration and the prompt file when untracked, the untracked files the
configuration names, the top-level files of ``.ralph/`` (a scripted agent's script) but no run's
own state, and the records of the presets runs started with.

:func:`setup_files` reads them as bytes (a remote ticket keeps them in the store) and
:func:`write_setup` writes them into a new tree. The bytes may travel between hosts and an
agent may have left the files they came from, so both sides follow no symlink: a file is read
and written with ``O_NOFOLLOW``, every folder on the way is opened without following one, and
a name is relative, normalised and never under ``.git``."""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from pathlib import Path
from typing import Final

from pipeline import PipelineError
from pipeline.app.workspace._peek import peek_config
from pipeline.events import Role
from pipeline.handlers.runtime import WorkspaceLayout, git_out

__all__ = [
    "FILE_LIMIT",
    "SETUP_LIMIT",
    "SetupFileError",
    "carry_setup",
    "setup_files",
    "write_setup",
]

FILE_LIMIT: Final = 1 << 20
"""The largest setup file carried (1 MiB): they are configuration and scripts, not data."""
SETUP_LIMIT: Final = 8 << 20
"""The most bytes of setup files a workspace carries in all (8 MiB)."""
STATE_KEY: Final = "@state/"
"""The prefix of a file kept in ralph's state folder (in the git directory, which no other
name may reach): only ``@state/workflows/...``, the records of presets."""


class SetupFileError(PipelineError, OSError):
    """A setup file that cannot be carried (too large, or a name that is not one); an
    ``OSError``, as the copying's other failures are."""


def carry_setup(root: Path, target: Path) -> None:
    """Copy into the new worktree ``target`` what workspace ``root`` has that its commit
    lacks and a run there needs. Raises ``OSError`` and ``GitError``."""
    write_setup(target, setup_files(root))


def setup_files(root: Path) -> dict[str, bytes]:
    """What workspace ``root`` has that its commit may lack and a run needs, by name relative
    to the workspace (or :data:`STATE_KEY` and the name in its state folder). Raises
    :class:`SetupFileError` for a file over :data:`FILE_LIMIT` or the whole over
    :data:`SETUP_LIMIT`, naming it, and ``OSError`` and ``GitError``."""
    layout = WorkspaceLayout(root=root)
    found: dict[str, Path] = {
        name: root / name for name in ("ralph.toml", "PROMPT.md", *_untracked_named(root))
    }
    # ralph's folder holds what the configuration may name (a scripted agent's script); not
    # the lock, the agent group or other runs' events files.
    if layout.ralph_dir.is_dir() and not layout.ralph_dir.is_symlink():
        for entry in sorted(layout.ralph_dir.iterdir()):
            if _carried(entry.name):
                found[f".ralph/{entry.name}"] = entry
    # A run of a preset reads its workflow's record at resume.
    workflows = layout.state_dir / "workflows"
    if workflows.is_dir() and not workflows.is_symlink():
        for folder, dirs, names in os.walk(workflows):  # never into a symlinked folder
            dirs.sort()
            for name in sorted(names):
                path = Path(folder, name)
                found[STATE_KEY + path.relative_to(layout.state_dir).as_posix()] = path
    files: dict[str, bytes] = {}
    total = 0
    for key, path in found.items():
        body = _read(path, key)
        if body is None:
            continue
        total += len(body)
        if total > SETUP_LIMIT:
            raise SetupFileError(
                errno.EFBIG,
                f"the setup files reach {SETUP_LIMIT >> 20} MiB at {key}; the configuration "
                "names too much untracked data to carry",
            )
        files[key] = body
    return files


def _read(path: Path, key: str) -> bytes | None:
    """The bytes of the regular file ``path`` (None: missing, a symlink or not a file)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as error:
        if error.errno == errno.ELOOP:  # a symlink: it could point the copy anywhere
            return None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as file:
        body = file.read(FILE_LIMIT + 1)
    if len(body) > FILE_LIMIT:
        raise SetupFileError(
            errno.EFBIG, f"setup file {key} is over {FILE_LIMIT >> 20} MiB; not carried"
        )
    return body


def write_setup(target: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (as :func:`setup_files` gave them) into the new tree ``target``. A file
    the tree already has (its commit's) is kept, as is one whose folder is a symlink there;
    a script (``#!``) is made executable, since the mode does not travel with the bytes.
    Raises :class:`SetupFileError` for a name that is not a plain relative one."""
    state = WorkspaceLayout(root=target).state_dir
    for key, body in files.items():
        base, name = (state, key[len(STATE_KEY) :]) if key.startswith(STATE_KEY) else (target, key)
        parts = _name_parts(name)
        if base is state and parts[0] != "workflows":
            raise SetupFileError(errno.EINVAL, f"setup file {key!r}: not a workflow's record")
        base.mkdir(parents=True, exist_ok=True)
        _write_under(base, parts, body)


def _name_parts(name: str) -> tuple[str, ...]:
    """The parts of the setup file name ``name``; :class:`SetupFileError` unless it is
    relative, normalised, free of ``..`` and NUL, and nowhere under a ``.git``."""
    parts = tuple(name.split("/"))
    plain = name and "\0" not in name and posixpath.normpath(name) == name
    if not plain or name.startswith("/") or ".." in parts:
        raise SetupFileError(errno.EINVAL, f"setup file {name!r}: not a plain relative name")
    if any(part.casefold() == ".git" for part in parts):
        raise SetupFileError(errno.EINVAL, f"setup file {name!r}: under a .git folder")
    return parts


def _write_under(base: Path, parts: tuple[str, ...], body: bytes) -> None:
    """Create ``base/parts`` holding ``body``, each folder opened with ``O_NOFOLLOW`` from
    the one before, so that no symlink of the tree takes the write outside ``base``."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, 0o777, dir_fd=fd)
            try:
                inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as error:
                if error.errno in (errno.ELOOP, errno.ENOTDIR):
                    return  # the tree's commit has a symlink or a file there: keep it
                raise
            os.close(fd)
            fd = inner
        mode = 0o777 if body.startswith((b"#!", b"\x7fELF")) else 0o666  # less the umask
        try:
            out = os.open(
                parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=fd
            )
        except FileExistsError:
            return  # the tree's own (tracked there), or a symlink: kept
        with os.fdopen(out, "wb") as file:
            file.write(body)
    finally:
        os.close(fd)


def _untracked_named(root: Path) -> list[str]:
    """The files ``root``'s ``ralph.toml`` names that git calls untracked: an ignored one (a
    tool's folder, a virtual environment's script) is no part of the work, and ralph's own
    folder is carried by its own rule."""
    listed = set(git_out(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0"))
    return [name for name in _named_files(root) if name in listed]


def _named_files(root: Path) -> list[str]:
    """The files of the workspace its ``ralph.toml`` names (a response schema, the prompt
    file, a gate's, the final check's or an agent's script), as paths inside ``root``; a
    new worktree gets those its commit lacks (untracked in the source). A word of a command that
    is no file of the workspace is no path, and nothing outside ``root`` is ever named."""
    config = peek_config(root)
    if config is None:
        return []  # the run says what is wrong with it
    hats = [config.hats.for_role(role) for role in Role]
    words = [
        config.prompt_file,
        *(hat.response_schema for hat in [*hats, *config.hats.work.values()]),
        *config.validate,
        *(word for gate in config.gates for word in gate.argv),
        *(word for agent in config.agents.values() for word in agent.command or ()),
    ]
    named = []
    for word in dict.fromkeys(w for w in words if w):
        path = root / word
        # A symlink is not followed: it could point the copy anywhere.
        inside = not path.is_symlink() and path.resolve().is_relative_to(root)
        if inside and path.is_file() and not word.startswith(("/", "-")):
            named.append(str(path.resolve().relative_to(root)))
    return named


def _carried(name: str) -> bool:
    """Whether a file of ralph's folder goes to a new worktree (not a run's own state)."""
    own = name in ("run.lock", "agent-group.json", "pipeline.db", "state.json", "event-log.jsonl")
    return not own and not (name.startswith("events-") and name.endswith(".jsonl"))
