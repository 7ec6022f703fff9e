"""Running a process inside the sandbox: a :class:`~pipeline.handlers.agents.ProcessSpec`
turned into the same process started by bwrap, with the mount plan, the filtered environment
and the data files (the account files, a CLI's settings with ralph's MCP server) (I/O). See
``docs/research/sandbox-design.md``, sections 6, 7 and 9.

The caller keeps running ``run_process``: the wrapped spec has bwrap's argv, the sandboxed
environment (bwrap passes its own on, so the filtered one is all the agent gets), the data
files as inherited descriptors and ``spare_leader`` set, so that a timeout's SIGTERM reaches
the agent and not bwrap first.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from os.path import realpath
from pathlib import Path
from typing import final

import attrs
from attrs import frozen

from pipeline.core.agents import PRESETS, workspace_code
from pipeline.core.sandbox import (
    INDEX_MOUNT,
    DataFile,
    Endpoint,
    EnvironmentRules,
    MountInputs,
    NetworkMode,
    PresetPaths,
    SandboxPolicy,
    SandboxPreset,
    expand_home,
    in_place_paths,
    mount_plan,
    preset_paths,
    sandbox_environment,
    with_account,
)
from pipeline.handlers.agents import ProcessSpec
from pipeline.handlers.sandbox._gather import (
    existing_hidden,
    host_sockets,
    interpreter_dirs,
    linked_paths,
    make_missing,
    other_repositories,
    program_dirs,
    submodule_git_dirs,
    worktree_folders,
)
from pipeline.handlers.sandbox._links import (
    LINKS_RECORD,
    forget_links,
    keep_record,
    note_links,
    put_back,
    recorded_links,
)
from pipeline.handlers.sandbox._network import NetworkGate, NetworkSeen
from pipeline.handlers.sandbox._probe import Probe

__all__ = [
    "AgentNeeds",
    "Sandbox",
    "Sandboxed",
    "WorkspacePaths",
    "environment_rules",
    "reachable",
]


@final
@frozen(kw_only=True)
class WorkspacePaths:
    """ralph's paths in one workspace, as the sandbox lays them out (all absolute)."""

    workspace: Path
    ralph_dir: Path
    events_file: Path | None
    """The run's events file; None for ralph's own git, which runs for no one run."""
    marker_dir: Path
    config_file: Path
    prompt_file: Path
    state_dir: Path
    git_dirs: tuple[Path, Path] | None
    """The git directory and the common one; None outside git."""
    store: Path | None = None
    """A store file kept in the work tree (read-only inside, its side files too)."""
    git_writable: bool = False
    """Whether git's folders are writable inside: only for ralph's own git running the
    repository's hooks or filters (:class:`~pipeline.core.sandbox.MountInputs`)."""


@final
@frozen(kw_only=True)
class AgentNeeds:
    """What one process needs beside the sandbox's own rules: its preset's folders and
    variables (``preset`` None: a command agent, a gate), the agent's ``sandbox`` table, and
    ``set_env``, the variables the person wrote for it (set as given)."""

    preset: str | None = None
    endpoints: tuple[Endpoint, ...] = ()
    """Its model endpoints (its CLI's declared ones, as they stood when the run started)."""
    allow: tuple[Endpoint, ...] = ()
    """More endpoints its ``sandbox`` table allows."""
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    pass_env: tuple[str, ...] = ()
    set_env: Mapping[str, str] = attrs.field(factory=dict)
    home_files: Mapping[str, bytes] = attrs.field(factory=dict)
    """Files shown read-only under ``$HOME`` by their relative path, over what is there (a
    CLI's settings with ralph's MCP server added): each must exist on the host, or bwrap
    would make its mount point there."""


def _sandbox_preset(name: str | None) -> SandboxPreset | None:
    """What the agent CLI ``name`` needs (None: a command, or no such preset)."""
    preset = PRESETS.get(name) if name is not None else None
    return None if preset is None else preset.sandbox


def _data_fd(data: bytes) -> int:
    """A file descriptor holding ``data`` from its start (read by bwrap's
    ``--ro-bind-data``)."""
    fd = os.memfd_create("ralph-sandbox-data", 0)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def reachable(policy: SandboxPolicy, needs: AgentNeeds) -> tuple[Endpoint, ...]:
    """What a process with ``needs`` may reach under ``policy``: nothing with ``network =
    "none"``, else its model endpoints and the ``allow`` entries."""
    if policy.network is NetworkMode.NONE:
        return ()
    return tuple(dict.fromkeys((*needs.endpoints, *policy.allow, *needs.allow)))


def environment_rules(
    policy: SandboxPolicy, needs: AgentNeeds, set_env: Mapping[str, str] | None = None
) -> EnvironmentRules:
    """What a process with ``needs`` gets of its environment under ``policy``: its preset's
    patterns, its own and ``[sandbox] pass_env``; its ``set_env`` and ``set_env`` as given."""
    table = _sandbox_preset(needs.preset)
    patterns = (*(() if table is None else table.pass_env), *needs.pass_env, *policy.pass_env)
    return EnvironmentRules(pass_env=patterns, set_env={**needs.set_env, **(set_env or {})})


@final
@frozen(kw_only=True)
class Sandboxed:
    """A process laid out for the sandbox: its ``spec`` to run, and what its network gate
    has ``seen`` of it so far (read it once the process has ended)."""

    spec: ProcessSpec
    seen: Callable[[], NetworkSeen]


@final
@frozen(kw_only=True)
class Sandbox:
    """The sandbox of one run: its decided ``policy``, the working ``probe`` and the
    workspace's paths."""

    policy: SandboxPolicy
    probe: Probe
    paths: WorkspacePaths
    _restored: list[str] = attrs.field(factory=list, eq=False, alias="restored")
    """The person's links in a CLI's folder put back since :meth:`take_restored` last ran."""

    def take_restored(self) -> tuple[str, ...]:
        """The person's links among a CLI folder's read-only entries that sandboxed processes
        replaced and that were put back, since this was last asked (absolute paths)."""
        taken = tuple(dict.fromkeys(self._restored))
        self._restored.clear()
        return taken

    @contextlib.contextmanager
    def wrapped(self, spec: ProcessSpec, needs: AgentNeeds) -> Iterator[Sandboxed]:
        """``spec`` as a sandboxed process, for the time of the ``with`` block: its network
        gate serves it, and the data files' descriptors stay open, until the block ends."""
        program = self.probe.program
        assert program is not None, "a sandbox is made from a probe that works"
        home = realpath(spec.env.get("HOME") or os.path.expanduser("~"))
        table = _sandbox_preset(needs.preset)
        preset = PresetPaths() if table is None else preset_paths(table, spec.env, home)
        paths = self.paths
        git = paths.git_dirs
        folders = [paths.marker_dir, paths.state_dir]
        if git is not None:
            # Mount points inside the read-only git folder must exist before bwrap starts.
            folders += [git[1] / name for name in ("hooks", "info", "worktrees", "ralph")]
        events = () if paths.events_file is None else (paths.events_file,)
        record = paths.state_dir / LINKS_RECORD
        # A process ralph never saw end (ralph killed -9) may have replaced the person's links.
        self._restored.extend(put_back(recorded_links(record)))
        links = note_links(preset)
        shown = {str(Path(home, path)): data for path, data in needs.home_files.items()}
        if self.probe.uid is not None:
            etc = (_text("/etc/passwd"), _text("/etc/group"))
            texts = with_account(*etc, self.probe.uid, home)
            shown |= {"/etc/passwd": texts[0].encode(), "/etc/group": texts[1].encode()}
        data: list[DataFile] = []
        with contextlib.ExitStack() as stack:
            keep_record(record, links)
            stack.callback(self._put_back, links, record)
            make_missing(folders, events, preset)
            for dest, content in shown.items():
                data.append(DataFile(dest=dest, fd=_data_fd(content)))
                stack.callback(os.close, data[-1].fd)
            gate = stack.enter_context(NetworkGate(reachable(self.policy, needs)))
            relay = None if gate.folder is None else str(gate.folder)
            index = None
            given = dict(gate.environment())
            if git is not None and not paths.git_writable:
                index = stack.enter_context(tempfile.TemporaryDirectory(prefix="ralph-index-"))
                _copy_index(git[0] / "index", Path(index) / "index")
                given["GIT_INDEX_FILE"] = f"{INDEX_MOUNT}/index"
            inputs = self._inputs(spec, needs, home, preset, tuple(data), relay, index)
            rules = environment_rules(self.policy, needs, given)
            command = gate.relay_command(sys.executable, spec.argv)
            yield Sandboxed(
                spec=attrs.evolve(
                    spec,
                    argv=(program, *mount_plan(inputs), "--", *command),
                    env=sandbox_environment(spec.env, rules),
                    spare_leader=True,
                    pass_fds=(*spec.pass_fds, *(f.fd for f in data)),
                ),
                seen=gate.seen,
            )

    def _put_back(self, links: Mapping[str, str], record: Path) -> None:
        """The person's ``links`` as they were before the process, which has ended: its pid
        namespace, and every process the agent started in it, ended with bwrap."""
        self._restored.extend(put_back(links))
        forget_links(record)

    def _inputs(
        self,
        spec: ProcessSpec,
        needs: AgentNeeds,
        home: str,
        preset: PresetPaths,
        data: tuple[DataFile, ...],
        relay_dir: str | None,
        index_dir: str | None,
    ) -> MountInputs:
        paths, policy = self.paths, self.policy
        workspace = Path(realpath(paths.workspace))
        git = paths.git_dirs
        common = None if git is None else Path(realpath(git[1]))
        passwd_home = _passwd_home()
        inputs = MountInputs(
            workspace=str(workspace),
            home=home,
            ralph_dir=realpath(paths.ralph_dir),
            events_file=None if paths.events_file is None else realpath(paths.events_file),
            marker_dir=realpath(paths.marker_dir),
            config_file=realpath(paths.config_file),
            prompt_file=realpath(paths.prompt_file),
            state_dir=realpath(paths.state_dir),
            git_dir=None if git is None else realpath(git[0]),
            common_dir=None if common is None else str(common),
            git_writable=paths.git_writable,
            worktree_folders=worktree_folders(common),
            submodule_git_dirs=submodule_git_dirs(common),
            store=None if paths.store is None else realpath(paths.store),
            passwd_home=None if passwd_home is None else realpath(passwd_home),
            other_repositories=other_repositories(workspace, common),
            hidden=existing_hidden(home, policy.hide),
            sockets=host_sockets(),
            interpreter_dirs=interpreter_dirs(workspace),
            program_dirs=program_dirs(spec.argv[0], spec.env, workspace),
            path_entries=tuple(e for e in spec.env.get("PATH", "").split(os.pathsep) if e),
            read=tuple(realpath(expand_home(p, home)) for p in (*policy.read, *needs.read)),
            write=tuple(realpath(expand_home(p, home)) for p in (*policy.write, *needs.write)),
            preset=preset,
            protect=(*workspace_code(), *policy.protect),
            relay_dir=relay_dir,
            index_dir=index_dir,
            uid=self.probe.uid,
            data_files=data,
        )
        # Looked at just before bwrap starts: no process an agent started is left to change
        # them (each invocation's processes end with it).
        return attrs.evolve(inputs, linked=linked_paths(in_place_paths(inputs)))


def _copy_index(source: Path, target: Path) -> None:
    """A private copy of git's index for one process (none where there is no index yet: git
    then starts from an empty one, as in a fresh repository)."""
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as reading, target.open("wb") as writing:
            shutil.copyfileobj(reading, writing)


def _text(path: str) -> str:
    try:
        return Path(path).read_text("utf-8", "replace")
    except OSError:
        return ""


def _passwd_home() -> str | None:
    with contextlib.suppress(KeyError):
        return pwd.getpwuid(os.getuid()).pw_dir
    return None
