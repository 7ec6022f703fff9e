"""The bwrap arguments of one sandboxed process (pure): section 6 of
``docs/research/sandbox-design.md``, in its order, laid by :class:`~._mounts.Layout`.

1. Namespaces: ``--unshare-all --die-with-parent --cap-drop ALL`` always (without a pid
   namespace and with capabilities kept an agent escaped on the test machine), ``--uid/--gid``
   when given, never ``--new-session`` (the sandbox keeps ralph's process group, so the
   recorded group reaches every process in it).
2. ``/`` read-only; a fresh ``/dev`` and ``/proc``; empty ``/tmp`` and ``/run`` (a host socket
   under a read-only bind still connects).
3. Hidden: ``$HOME`` (and the passwd home), other repositories, the runs' worktrees folder,
   the deny list, ``hide`` and every unix socket the host has bound to a path.
4. Read-only back into them: ralph's interpreter, the agent program, ``PATH`` entries, the
   toolchains, git's configuration, ``read``.
5. Writable back: the preset's folders and files, ``write``; the preset's code on top,
   read-only.
6. The workspace writable; the whole git folder (the common one, this worktree's, the work
   tree's ``.git``: refs, objects, config, hooks, ``commondir``) read-only, but for ralph's
   own git running the repository's hooks; other worktrees' git folders and every run's
   state hidden; ``.ralph`` (but the events file), ``ralph.toml``, the prompt file,
   ``.agent/tmp``, a store in the tree and the protected paths read-only. ``.agent`` is bound
   onto itself, writable: a mount point cannot be renamed or removed, so an agent cannot put
   a link to a folder of the person's where ralph empties, writes and reads its reports.
7. The relay's sockets at ``/run/ralph``, the process's own copy of git's index at
   ``/run/ralph-index``, the data files (the account files, a CLI's settings with ralph's
   MCP server), ``--chdir`` the workspace.

The arguments stop before the command: the caller adds ``--`` and the agent's argv.
"""

from __future__ import annotations

import posixpath
from typing import Final

from pipeline.core.sandbox._inputs import (
    DEFAULT_PROTECT,
    GIT_CONFIG_PATHS,
    TOOLCHAIN_ROOTS,
    MountInputs,
)
from pipeline.core.sandbox._mounts import Exposure, Layout, Mount
from pipeline.core.sandbox._paths import SandboxError, expand_home, is_within, join, normal_absolute

__all__ = ["INDEX_MOUNT", "MANDATORY_FLAGS", "RELAY_MOUNT", "in_place_paths", "mount_plan"]

MANDATORY_FLAGS: Final = ("--unshare-all", "--die-with-parent", "--cap-drop", "ALL")
"""In every plan: every namespace, the sandbox ends with ralph, no capability inside."""

RELAY_MOUNT: Final = "/run/ralph"
"""Where the relay's sockets are inside."""

INDEX_MOUNT: Final = "/run/ralph-index"
"""Where the process's own copy of git's index is inside (``GIT_INDEX_FILE`` names the file
``index`` in it): git folders are read-only, yet ``git checkout REV -- PATH`` and ``git
status`` need an index they can write."""

_STORE_SIDE_FILES: Final = ("", "-wal", "-shm", "-journal")

_READ, _WRITE, _COVER = Exposure.READ, Exposure.WRITE, Exposure.COVER


def _ro(
    path: str, what: str, *, guard: bool = False, needed: bool = False, optional: bool = True
) -> Mount:
    """A read-only bind of ``path``; an ``optional`` one is skipped by bwrap where the source
    does not exist, a required one fails it loudly (for a source the handler made)."""
    flag = "--ro-bind-try" if optional else "--ro-bind"
    return Mount(
        args=(flag, path, path), dest=path, exposure=_READ, what=what, guard=guard, needed=needed
    )


def _rw(path: str, what: str, *, must_exist: bool = True) -> Mount:
    flag = "--bind" if must_exist else "--bind-try"
    return Mount(args=(flag, path, path), dest=path, exposure=_WRITE, what=what, needed=True)


def _hide(path: str, what: str, *, is_dir: bool = True, needed: bool = False) -> Mount:
    args = ("--tmpfs", path) if is_dir else ("--ro-bind", "/dev/null", path)
    return Mount(args=args, dest=path, exposure=_COVER, what=what, guard=True, needed=needed)


def _namespaces(inputs: MountInputs) -> list[str]:
    flags = list(MANDATORY_FLAGS)
    if inputs.uid is not None:
        flags += ["--uid", str(inputs.uid), "--gid", str(inputs.uid)]
    return flags


def _system(layout: Layout) -> None:
    layout.add(Mount(args=("--ro-bind", "/", "/"), dest="/", exposure=_READ, what="the root"))
    for flag, path in (("--dev", "/dev"), ("--proc", "/proc")):
        what = f"the sandbox's {path}"
        layout.add(Mount(args=(flag, path), dest=path, exposure=_COVER, what=what, guard=True))
    layout.add(_hide("/tmp", "the private /tmp"))
    layout.add(_hide("/run", "the private /run"))


def _hidden_places(inputs: MountInputs, layout: Layout) -> None:
    # Needed as well as a guard: laid even where an earlier tmpfs hides it already (a $HOME
    # under /tmp), so that it exists, empty, for the programs that write there.
    layout.add(_hide(inputs.home, "the hidden $HOME", needed=True))
    if inputs.passwd_home is not None and inputs.passwd_home != inputs.home:
        layout.add(_hide(inputs.passwd_home, "the hidden passwd home"))
    for repository in inputs.other_repositories:
        layout.add(_hide(repository, "another repository, hidden"))
    for hidden in inputs.hidden:
        layout.add(_hide(hidden.path, "a hidden path", is_dir=hidden.is_dir))
    for folder in inputs.worktree_folders:
        # Whole, the process's own worktree in it too: the workspace is bound back later.
        layout.add(_hide(folder, "the runs' worktrees"))
    for socket in inputs.sockets:
        layout.add(_hide(socket, "a host socket", is_dir=False))


def _in_hidden_entry(path: str, inputs: MountInputs) -> bool:
    """Whether ``path`` lies in a deny-list, ``hide`` or other-repository entry: a ``PATH``
    entry there is not worth uncovering (``~/.docker/bin`` would show part of ``~/.docker``)."""
    places = (*inputs.other_repositories, *(h.path for h in inputs.hidden))
    return any(is_within(path, place) for place in places)


def _read_back(inputs: MountInputs, layout: Layout) -> None:
    for folder in inputs.interpreter_dirs:
        layout.add(_ro(folder, "ralph's interpreter", guard=True, needed=True, optional=False))
    for folder in inputs.program_dirs:
        layout.add(_ro(folder, "the agent program", guard=True, needed=True, optional=False))
    entries = (normal_absolute(entry) for entry in inputs.path_entries)
    for entry in dict.fromkeys(e for e in entries if e is not None):
        # Only entries the plan hid: the rest show through the read-only root already.
        if layout.shows(entry) is _COVER and not _in_hidden_entry(entry, inputs):
            layout.add(_ro(entry, "a PATH entry"))
    for root in (*TOOLCHAIN_ROOTS, *GIT_CONFIG_PATHS):
        path = expand_home(root, inputs.home)
        if not _in_hidden_entry(path, inputs):
            layout.add(_ro(path, "a toolchain or git's configuration"))
    for path in inputs.read:
        layout.add(_ro(path, "a read entry", needed=True))


def _write_back(inputs: MountInputs, layout: Layout) -> None:
    for folder in inputs.preset.writable:
        layout.add(_rw(folder, "the agent CLI's folder"))
    for path in inputs.preset.writable_files:
        layout.add(_rw(path, "the agent CLI's file", must_exist=False))
    for path in inputs.write:
        layout.add(_rw(path, "a write entry", must_exist=False))
    for path in inputs.preset.read_only:
        if path in inputs.linked:
            continue  # a link the agent left in its CLI's folder: bound, it would name a place
        # Needed too: some CLIs' settings sit in the hidden $HOME itself and must be bound back.
        layout.add(_ro(path, "the agent CLI's settings", guard=True, needed=True))


def _git(inputs: MountInputs, layout: Layout) -> None:
    git_dir, common = inputs.git_dir, inputs.common_dir
    if git_dir is None or common is None:
        return
    workspace = inputs.workspace
    if inputs.git_writable:
        # ralph's own git, when it runs the repository's hooks or filters: it writes objects,
        # refs and the index. In a linked worktree both folders live outside the workspace (in
        # the main tree, hidden as another repository).
        for folder in dict.fromkeys((common, git_dir)):
            if not is_within(folder, workspace) and not (
                folder == git_dir and is_within(folder, common)
            ):
                layout.add(_rw(folder, "the git directory"))
    else:
        # ralph alone writes git: the whole folder (refs, objects, config, ``commondir``,
        # ``gitdir``, every worktree's folder) read-only, and the work tree's ``.git`` (a
        # linked worktree's pointer file) with it, so nothing an agent writes decides where
        # git reads config, hooks or attributes from, for ralph or for the person later.
        for folder in dict.fromkeys((common, git_dir)):
            layout.add(_shown_ro(folder, "the git directory"))
        dot_git = join(workspace, ".git")
        if dot_git not in inputs.linked:
            layout.add(_ro(dot_git, "the work tree's .git", guard=True))
    for name in ("hooks", "info", "config"):
        layout.add(_ro(join(common, name), f"git's {name}", guard=True, optional=False))
    layout.add(_ro(join(common, "config.worktree"), "git's config.worktree", guard=True))
    others = (git_dir, *inputs.submodule_git_dirs)
    for folder in dict.fromkeys(f for f in others if f != common):
        for name in ("hooks", "info", "config", "config.worktree"):
            layout.add(_ro(join(folder, name), f"git's {name}", guard=True))
    _other_runs(inputs, layout)


def _other_runs(inputs: MountInputs, layout: Layout) -> None:
    """Hide what belongs to other runs: every linked worktree's git folder but this one's
    (each holds its run's store, ``ralph/``) and the main tree's state."""
    git_dir, common = inputs.git_dir, inputs.common_dir
    assert git_dir is not None
    assert common is not None
    worktrees = join(common, "worktrees")
    # Writable, but private to the sandbox: this worktree's own folder is bound inside it.
    layout.add(_hide(worktrees, "other worktrees' git folders"))
    if is_within(git_dir, worktrees):
        shown = _rw if inputs.git_writable else _shown_ro
        layout.add(shown(git_dir, "the git directory"))
    main_state = join(common, "ralph")
    if not is_within(inputs.state_dir, main_state):
        layout.add(_hide_ro(main_state, "the main tree's hidden state"))


def _shown_ro(path: str, what: str) -> Mount:
    """``path`` shown read-only, whatever was laid over it before (a hidden main work tree)."""
    return _ro(path, what, guard=True, needed=True, optional=False)


def _hide_ro(path: str, what: str) -> Mount:
    """An empty, read-only folder over ``path`` (made where it was missing: nothing can be
    created there either)."""
    return Mount(
        args=("--tmpfs", path, "--remount-ro", path),
        dest=path,
        exposure=_COVER,
        what=what,
        guard=True,
    )


def _workspace(inputs: MountInputs, layout: Layout) -> None:
    workspace = inputs.workspace
    layout.add(_rw(workspace, "the workspace"))
    _git(inputs, layout)
    layout.add(_ro(inputs.ralph_dir, "ralph's folder", guard=True, optional=False))
    if inputs.events_file is not None:
        layout.add(_rw(inputs.events_file, "the run's events file"))
    layout.add(_ro(inputs.config_file, "ralph.toml", guard=True))
    layout.add(_ro(inputs.prompt_file, "the prompt file", guard=True))
    # ``.agent`` a mount point (the marker's folder is its ``tmp``, which the handler makes).
    layout.add(_rw(posixpath.dirname(inputs.marker_dir), "ralph's folder for the agent"))
    marker = "the completion marker's folder"
    layout.add(_ro(inputs.marker_dir, marker, guard=True, optional=False))
    for path, what in _in_workspace(inputs):
        # A link there is the agent's to change anyway; bound, it would name the place.
        if path not in inputs.linked:
            layout.add(_ro(path, what, guard=True))
    if inputs.state_dir != inputs.ralph_dir:
        layout.add(_hide_ro(inputs.state_dir, "ralph's hidden state"))


def _in_workspace(inputs: MountInputs) -> list[tuple[str, str]]:
    """The workspace paths bound read-only onto themselves as the plan joins them (the store's
    side files, the protected paths), each with what it is."""
    found: list[tuple[str, str]] = []
    store = inputs.store
    if store is not None and not is_within(store, inputs.state_dir):
        found += [(store + side, "the store") for side in _STORE_SIDE_FILES]
    for relative in dict.fromkeys((*DEFAULT_PROTECT, *inputs.protect)):
        found.append((join(inputs.workspace, relative), "a protected path"))
    return found


def in_place_paths(inputs: MountInputs) -> tuple[tuple[str, str], ...]:
    """The paths the plan binds onto themselves as it joins them, not as the handler resolved
    them, each with the folder it is meant to lie in: the work tree's ``.git``, the store's
    side files and the protected paths (in the workspace), the CLI's settings in its writable
    folders. An agent may leave a link at each; the handler gives those a link leads through
    below their folder as ``linked``, and the plan binds none of them."""
    workspace = inputs.workspace
    found = [(workspace, path) for path, _ in _in_workspace(inputs)]
    if inputs.common_dir is not None:
        found.insert(0, (workspace, join(workspace, ".git")))
    preset = inputs.preset
    for path in preset.read_only:
        folder = next((f for f in preset.writable if is_within(path, f) and path != f), None)
        if folder is not None:
            found.append((folder, path))
    return tuple(dict.fromkeys(found))


def _last(inputs: MountInputs, layout: Layout) -> list[str]:
    for source, dest, what in (
        (inputs.relay_dir, RELAY_MOUNT, "the relay"),
        (inputs.index_dir, INDEX_MOUNT, "the index"),
    ):
        if source is not None:
            layout.add(Mount(args=("--bind", source, dest), dest=dest, exposure=_WRITE, what=what))
    data = (arg for f in inputs.data_files for arg in ("--ro-bind-data", str(f.fd), f.dest))
    return [*data, "--chdir", inputs.workspace]


def _check_own_code(inputs: MountInputs) -> None:
    """Refuse a writable path inside ralph's interpreter or the agent program: the layout
    keeps the folder itself read-only, but not what is bound writable inside it."""
    code = [(f, "ralph's interpreter") for f in inputs.interpreter_dirs]
    code += [(f, "the agent program") for f in inputs.program_dirs]
    writable = [(inputs.workspace, "the workspace")]
    writable += [(p, "a write entry") for p in inputs.write]
    writable += [(p, "the agent CLI's folder") for p in inputs.preset.writable]
    writable += [(p, "the agent CLI's file") for p in inputs.preset.writable_files]
    for path, what in writable:
        for folder, kind in code:
            if is_within(path, folder):
                raise SandboxError(
                    f"{what} ({path}) would be writable inside {kind} ({folder}): "
                    "the sandbox cannot honour both"
                )


def mount_plan(inputs: MountInputs) -> tuple[str, ...]:
    """bwrap's arguments for a process laid out from ``inputs``, up to (not including) ``--``.

    Raises :class:`~pipeline.core.sandbox.SandboxError` when two inputs contradict each other (a
    ``read`` entry that would uncover ``$HOME``, a ``hide`` entry over the CLI's folder, a
    workspace that is ``$HOME``, a ``write`` entry inside ralph's interpreter): no order of
    mounts honours both.
    """
    _check_own_code(inputs)
    layout = Layout()
    _system(layout)
    _hidden_places(inputs, layout)
    _read_back(inputs, layout)
    _write_back(inputs, layout)
    _workspace(inputs, layout)
    tail = _last(inputs, layout)
    mounts = layout.finish()
    return (*_namespaces(inputs), *(arg for m in mounts for arg in m.args), *tail)
