"""What the mount plan is built from: the paths of one workspace, machine and agent, as one
value the handler gathers (pure data and its checks), and the fixed lists of the design.

Everything the plan needs to know about the file system is in :class:`MountInputs` already
resolved by the handler (links followed, missing sources made, which hidden paths exist and
whether each is a folder): the plan itself never looks.

What an agent CLI needs is a type here too, :class:`SandboxPreset` (each CLI's module in
``pipeline.core.agents`` declares its own): its folders under ``$HOME`` (section 6 of
``docs/research/sandbox-design.md``) and its variables (section 7). A CLI's folders are
writable (OAuth refreshes rotate tokens there), but the files in them that hold code the
person's own, unsandboxed CLI would run later (a hook, a plugin) are bound read-only on top,
as :class:`PresetPaths`. A command agent has no preset and gets none of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

from attrs import field, frozen

from pipeline.core.sandbox._paths import (
    SandboxError,
    absolute,
    each_absolute,
    join,
    normal_absolute,
)
from pipeline.core.sandbox._policy import MAX_UID, check_protect

__all__ = [
    "DEFAULT_PROTECT",
    "DENY_LIST",
    "GIT_CONFIG_PATHS",
    "TOOLCHAIN_ROOTS",
    "ConfigFolder",
    "DataFile",
    "Hidden",
    "MountInputs",
    "PresetPaths",
    "SandboxPreset",
    "empty_form",
    "preset_paths",
]

DENY_LIST: Final = (
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gcloud",
    "~/.azure",
    "~/.kube",
    "~/.docker",
    "~/.netrc",
    "~/.npmrc",
    "~/.pypirc",
    "~/.git-credentials",
    # git-credential-store's second file, inside ``~/.config/git``, which is bound back.
    "~/.config/git/credentials",
    "~/.config/gh",
    "~/.password-store",
    "~/.local/share/keyrings",
)
"""Credentials hidden whatever ``read`` and ``write`` say: the handler gives each that exists
as a :class:`Hidden` (a folder or a file) in :attr:`MountInputs.hidden`, beside ``hide``."""

TOOLCHAIN_ROOTS: Final = (
    "~/.pyenv",
    "~/.nvm",
    "~/.rustup",
    "~/.cargo/bin",
    "~/.volta",
    "~/.bun/bin",
    "~/.local/bin",
    "~/go/bin",
    "~/.rbenv",
    "~/.asdf",
)
"""Toolchains installed under ``$HOME``, bound back read-only where they exist (the programs on
``PATH`` there are often links into them)."""

GIT_CONFIG_PATHS: Final = ("~/.gitconfig", "~/.config/git")
"""The person's git configuration (name, e-mail, aliases), bound back read-only: an agent's
``git commit`` needs the identity. ``~/.config/git`` is git's other place for the same file."""

DEFAULT_PROTECT: Final = (
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".profile",
    ".gitmodules",
    ".vscode",
    ".idea",
)
"""Workspace files that run code in the person's own tools later (shell start-up files, editor
tasks): bound read-only where they exist. Each agent CLI's own (its ``workspace_code``, MCP
servers among them) are added by the handler, for every agent."""


@final
@frozen(kw_only=True)
class ConfigFolder:
    """A folder an agent CLI keeps its configuration, credentials or cache in.

    It is ``$HOME/default``, or, when ``variable`` holds an absolute path, that path joined
    with ``suffix`` (``$XDG_CONFIG_HOME/NAME``, ``$NAME_CONFIG_DIR``).
    """

    default: str
    variable: str | None = None
    suffix: str = ""
    read_only: tuple[str, ...] = ()
    """Entries inside that hold code or settings the CLI obeys: bound read-only on top."""

    def locate(self, environ: Mapping[str, str], home: str) -> str:
        """Where the folder is for a CLI started with ``environ`` and ``home``."""
        moved = normal_absolute(environ.get(self.variable, "")) if self.variable else None
        if moved is not None:
            return join(moved, self.suffix) if self.suffix else moved
        return join(home, self.default)


@final
@frozen(kw_only=True)
class SandboxPreset:
    """One agent CLI's needs: ``folders`` (writable, made when missing), ``files`` under
    ``$HOME`` (writable, bound only when present), ``read_only_files`` under ``$HOME`` and
    the ``pass_env`` patterns."""

    folders: tuple[ConfigFolder, ...]
    pass_env: tuple[str, ...]
    files: tuple[str, ...] = ()
    read_only_files: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class PresetPaths:
    """A preset's paths on one machine: what the mount plan binds back into ``$HOME``."""

    writable: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Folders, which the handler creates (``0700``) when missing."""
    writable_files: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Files bound writable only when they exist."""
    read_only: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Bound read-only on top, when they exist."""


_EMPTY_FORMS: Final = {".json": b"{}\n", ".jsonc": b"{}\n", ".md": b"", ".toml": b""}
"""What each kind of settings file a CLI reads is made as when missing: an empty object
(Claude Code's, Gemini CLI's and OpenCode's settings), an empty file (instructions, Codex's
``config.toml``). Each is what the CLI reads as no settings at all."""


def empty_form(name: str) -> bytes | None:
    """What the read-only entry ``name`` of a CLI's writable folder is made as when missing
    (None: an empty folder), so that the sandbox binds a mount point there the agent cannot
    replace; a name with no inert form known is a preset's bug."""
    _, dot, suffix = name.rpartition(".")
    if not dot:
        return None
    form = _EMPTY_FORMS.get(f".{suffix}")
    if form is None:
        raise SandboxError(f"no empty form is known for a CLI's read-only entry {name!r}")
    return form


def preset_paths(preset: SandboxPreset, environ: Mapping[str, str], home: str) -> PresetPaths:
    """Where ``preset``'s folders and files are for an agent run with ``environ`` (its
    ``env`` included) and ``home``."""
    writable = tuple(dict.fromkeys(f.locate(environ, home) for f in preset.folders))
    inside = (
        join(folder.locate(environ, home), name)
        for folder in preset.folders
        for name in folder.read_only
    )
    return PresetPaths(
        writable=writable,
        writable_files=tuple(join(home, name) for name in preset.files),
        read_only=tuple(
            dict.fromkeys([*inside, *(join(home, name) for name in preset.read_only_files)])
        ),
    )


@final
@frozen(kw_only=True)
class Hidden:
    """A path that exists on the host and must not be seen: a folder (covered by an empty
    tmpfs) or anything else (covered by ``/dev/null``)."""

    path: str = field(validator=absolute)
    is_dir: bool


def _descriptor(_instance: object, _attribute: object, fd: int) -> None:
    if fd < 0:
        raise SandboxError(f"a file descriptor cannot be negative, got {fd}")


@final
@frozen(kw_only=True)
class DataFile:
    """A file shown read-only at ``dest`` with what the descriptor ``fd`` holds (bwrap's
    ``--ro-bind-data``, laid last): ``/etc/passwd`` and ``/etc/group`` as the sandbox shows
    them (:func:`~pipeline.core.sandbox.with_account`), a CLI's settings with ralph's MCP
    server added."""

    dest: str = field(validator=absolute)
    fd: int = field(validator=_descriptor)


@final
@frozen(kw_only=True)
class MountInputs:
    """The paths one sandboxed process is laid out from (all absolute and normal, links
    resolved; ``protect`` relative to ``workspace``). ``uid`` None: the caller's own uid."""

    workspace: str = field(validator=absolute)
    home: str = field(validator=absolute)
    ralph_dir: str = field(validator=absolute)
    """``.ralph``: read-only, but for the events file."""
    events_file: str | None = field(validator=absolute)
    """The run's events file, writable (the handler makes it first); None for a process of
    no run's (ralph's own git, whose hooks and filters run sandboxed)."""
    marker_dir: str = field(validator=absolute)
    """``.agent/tmp``, where dev-fix's completion marker goes: read-only."""
    config_file: str = field(validator=absolute)
    """``ralph.toml``: read-only where it exists."""
    prompt_file: str = field(validator=absolute)
    """The user's prompt file: read-only where it exists."""
    state_dir: str = field(validator=absolute)
    """ralph's state folder (``.git/ralph``: the store, saved prompts): hidden, unless it is
    ``ralph_dir`` itself (a workspace outside git), which is read-only already."""
    git_dir: str | None = field(default=None, validator=absolute)
    common_dir: str | None = field(default=None, validator=absolute)
    """The git directory and the common one (they differ in a linked worktree); None outside
    git."""
    git_writable: bool = False
    """Whether git's folders are writable: only for ralph's own git, when it runs the
    repository's hooks or filters; every other process sees the whole git folder read-only."""
    worktree_folders: tuple[str, ...] = field(default=(), validator=each_absolute)
    """The folder of the runs' worktrees beside the main work tree (``<main>-worktrees``)
    where it exists: hidden, but for the workspace itself when it lies inside."""
    submodule_git_dirs: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Submodules' git directories (``.git/modules/*``): their hooks and config read-only."""
    store: str | None = field(default=None, validator=absolute)
    """A store file inside the work tree (``--store ./x.db``): read-only, side files too."""
    passwd_home: str | None = field(default=None, validator=absolute)
    """The home folder ``/etc/passwd`` gives ralph's uid, when it is not ``home``: hidden."""
    other_repositories: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Siblings of the workspace holding a ``.git``, and a linked worktree's main work tree."""
    hidden: tuple[Hidden, ...] = ()
    """The deny list and ``hide`` entries that exist."""
    sockets: tuple[str, ...] = field(default=(), validator=each_absolute)
    """The host's unix sockets bound to a path: each covered (a read-only bind still
    connects)."""
    interpreter_dirs: tuple[str, ...] = field(default=(), validator=each_absolute)
    """ralph's own interpreter (``sys.base_prefix`` resolved, ``sys.prefix``): read-only."""
    program_dirs: tuple[str, ...] = field(default=(), validator=each_absolute)
    """The agent program's root (its ``node_modules`` folder's parent, its venv, its folder)."""
    path_entries: tuple[str, ...] = ()
    """``PATH``, in order: entries in a hidden place are bound back (relative ones ignored)."""
    read: tuple[str, ...] = field(default=(), validator=each_absolute)
    write: tuple[str, ...] = field(default=(), validator=each_absolute)
    preset: PresetPaths = field(factory=PresetPaths)
    protect: tuple[str, ...] = field(default=(), validator=check_protect)
    """More workspace paths read-only, beside :data:`DEFAULT_PROTECT`."""
    linked: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Of the paths the plan binds onto themselves unresolved
    (:func:`~pipeline.core.sandbox.in_place_paths`), those a link leads through below their
    folder on the host: never bound. bwrap follows a link at both ends of a bind, the source
    from the host and the destination from inside, so a link an agent left at ``.vscode``
    would bind what it names over whatever the sandbox shows there (the cover of a
    repository it hides)."""
    index_dir: str | None = field(default=None, validator=absolute)
    """A folder holding the process's own copy of git's index, bound writable at
    :data:`~pipeline.core.sandbox.INDEX_MOUNT`; None: none (outside git, or ralph's own git)."""
    relay_dir: str | None = field(default=None, validator=absolute)
    """The folder of the network relay's sockets, bound at ``/run/ralph``; None: no relay."""
    uid: int | None = None
    """The uid and gid inside (``--uid N --gid N``); None keeps the caller's."""
    data_files: tuple[DataFile, ...] = ()
    """Files shown read-only over whatever is at their place."""

    def __attrs_post_init__(self) -> None:
        if (self.git_dir is None) != (self.common_dir is None):
            raise SandboxError("git_dir and common_dir are given together or not at all")
        if self.uid is not None and not 0 <= self.uid <= MAX_UID:
            raise SandboxError(f"the uid inside must be from 0 to {MAX_UID}, got {self.uid}")
