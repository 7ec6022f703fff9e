"""The world a pinned gate runs in: a scratch worktree holding the agent's work with the
person's checks laid over it from the run's base commit (I/O: git, files).

The work tree itself is never touched. Each time a gate (or a blocking hook) runs, the
scratch (``<main work tree>-worktrees/.gates-<run id>``, detached, made anew by each ralph
process, so a half-made one a crash left is never used) is brought to the agent's state: the
run's ``HEAD`` with everything the agent has not committed, staged or not, and its untracked
files that are not ignored (ralph's own folders left out), read through an index of ralph's
own (``git add -A`` into a copy of the worktree's index, then ``write-tree``). Then the files
that decide what the check checks (:func:`pipeline.core.screening.pin_kind`) are laid over it from
the base: test files and runner files as the base has them (one the agent added, removed;
one it deleted or renamed, back), the runner's part of a mixed file spliced in, the files
the command names. That is the **person's world**; a test file the agent added is left out of
it, and put in for a second run once the first passed (the **agent's world**). Ignored folders
at the top of the work tree (``node_modules``, ``.venv``, build output) are linked into the
scratch: they are the agent's, as in the work tree.

The scratch's ``HEAD`` is the run's, its index the world laid out, so a hook that reads
``git diff --cached`` sees the agent's changes as about to be committed.

The laying out itself (:class:`Layering`) knows nothing of the work tree: it takes the agent's
state as a tree and shows a world in whichever scratch worktree it is given. A run's gates
(:class:`GateWorld`) give it the work tree as the agent left it; the merge queue's
(:class:`CommitWorld`) the replayed head, in its own ``.integration-<run id>`` scratch.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final, Protocol, final

import attrs
from attrs import define, field, frozen

from pipeline.core.config import RalphConfig
from pipeline.core.screening import PinKind, named_files, pin_kind, splice
from pipeline.handlers.runtime._git import OWN_FOLDERS, own_pathspecs
from pipeline.handlers.runtime._gitcmd import (
    GitPolicy,
    gitlink_excludes,
    resolved,
    run_git,
    run_git_bytes,
)
from pipeline.handlers.runtime._layout import WorkspaceLayout, git_dirs
from pipeline.handlers.runtime._sandboxing import SandboxChoice
from pipeline.handlers.runtime._worktree_list import drop_scratch, fresh_scratch
from pipeline.handlers.sandbox import AgentNeeds, Sandbox

__all__ = [
    "CommitWorld",
    "GateWorld",
    "Layering",
    "PinnedWorld",
    "Pinning",
    "World",
    "link_ignored",
]

_NOT_LINKED: Final = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
"""Ignored top-level folders not linked in: caches of the work tree's own runs, which a run
in the scratch makes afresh rather than mixing its files with them."""


def link_ignored(
    root: Path, scratch: Path, policy: GitPolicy, own: tuple[str, ...]
) -> tuple[Path, ...]:
    """Link ``root``'s ignored top-level folders and files (``node_modules``, ``.venv``,
    ``build``) into ``scratch``, where it has nothing of that name; never ralph's own folders,
    ``own`` (ralph's files) nor caches. The paths linked to."""
    done = run_git_bytes(
        root,
        "ls-files",
        "-z",
        "--others",
        "--ignored",
        "--exclude-standard",
        "--directory",
        policy=policy,
    )
    linked: list[Path] = []
    for record in done.stdout.split(b"\0"):
        name = os.fsdecode(record).rstrip("/")
        if not name or "/" in name or name in (*OWN_FOLDERS, *own, *_NOT_LINKED):
            continue
        target = scratch / name
        if not target.exists() and not target.is_symlink():
            target.symlink_to(root.resolve() / name)
            linked.append(root.resolve() / name)
    return tuple(linked)


@final
@frozen(kw_only=True)
class _Entry:
    """One file of a tree: its mode and object."""

    mode: str
    sha: str


@final
@frozen(kw_only=True)
class PinnedWorld:
    """The worlds laid out for one gate: the person's (``person``, a tree) and, when the agent
    added test files, the agent's (``agent``, the same with them); ``base`` the commit the
    checks came from; ``restored`` the files whose agent's version is not used; ``added`` the
    test files the agent added."""

    base: str
    head: str
    person: str
    agent: str | None
    restored: tuple[str, ...]
    added: tuple[str, ...]


class World(Protocol):
    """A scratch worktree where pinned checks run, and how the agent's state is read there."""

    def lay_out(
        self, base: str, test_paths: tuple[str, ...], argvs: Iterable[tuple[str, ...]]
    ) -> PinnedWorld | None:
        """The worlds for a check pinned to commit ``base`` (None: nothing to pin to)."""
        ...

    def show(self, world: PinnedWorld, tree: str) -> Path:
        """The scratch worktree holding ``tree`` (one of ``world``'s); its path."""
        ...

    def linked(self) -> tuple[Path, ...]:
        """Folders outside the scratch linked into it (a sandboxed check is given them)."""
        ...

    def drop(self) -> None:
        """Remove what the world made (the run or the landing is over)."""
        ...


@final
@frozen(kw_only=True)
class Layering:
    """The person's checks laid over an agent's tree, in the repository of ``root`` with
    ralph's git ``policy``, through ``index`` (an index file of ralph's own): the one place
    that decides what a pinned check runs on, for a run's gates and the merge queue's."""

    root: Path
    policy: GitPolicy
    index: Path

    def world(
        self,
        base: str,
        head: str,
        tree: str,
        test_paths: tuple[str, ...],
        argvs: Iterable[tuple[str, ...]],
    ) -> PinnedWorld:
        """The worlds of the agent's ``tree`` (on commit ``head``) with what decides what the
        check checks taken from commit ``base``: its tests, the runner's files and parts of
        files, the files ``argvs`` name; the test files the agent added only in the agent's
        world. Raises :class:`GitError`."""
        theirs = self._listing(base)
        mine = self._listing(tree)
        named = named_files(argvs, theirs.__contains__)
        changes: dict[str, _Entry | None] = {}
        added: list[str] = []
        for path in sorted(theirs.keys() | mine.keys()):
            kind = pin_kind(path, test_paths, named)
            if kind is PinKind.FREE:
                continue
            was, now = theirs.get(path), mine.get(path)
            if kind is PinKind.STAND_IN and was is not None:
                continue  # the person's own module, under test like the rest of the code
            if kind is PinKind.MIXED:
                wanted = self._spliced(path, was, now)
            elif kind is PinKind.TEST and was is None:
                added.append(path)
                continue
            else:
                wanted = was
            if wanted != now:
                changes[path] = wanted
        agent = self._tree_with(tree, changes)
        person = self._tree_with(agent, dict.fromkeys(added)) if added else agent
        return PinnedWorld(
            base=base,
            head=head,
            person=person,
            agent=agent if added else None,
            restored=tuple(changes),
            added=tuple(added),
        )

    def show(
        self, scratch: Path, world: PinnedWorld, tree: str, keep: tuple[str, ...] = ()
    ) -> None:
        """Bring the scratch worktree ``scratch`` to ``tree`` (one of ``world``'s), its
        ``HEAD`` at ``world.head``: nothing a check left there counts, but the top-level
        folders named in ``keep`` (ralph's own, where the check's log is being written)."""
        self._git(scratch, "update-ref", "--no-deref", "HEAD", world.head)
        # Whatever a check changed last time goes first: the index and files as HEAD has them.
        self._git(scratch, "reset", "--hard", "-q")
        self._git(scratch, "read-tree", "-u", "--reset", tree)
        self._git(scratch, "clean", "-ffdxq", *(f"--exclude=/{name}" for name in keep))
        # Empty, for the sandbox, which shows a workspace's .ralph read-only.
        (scratch / OWN_FOLDERS[0]).mkdir(exist_ok=True)

    def _git(self, where: Path, *args: str) -> str:
        return run_git(where, *args, policy=self.policy).stdout

    def git_index(self, *args: str) -> str:
        """ralph's git in ``root`` on the index file ``index``: its output."""
        return run_git(self.root, *args, policy=self.policy, index=self.index).stdout

    def _listing(self, tree: str) -> dict[str, _Entry]:
        """Every file (blob or link) of ``tree``, by path."""
        done = run_git_bytes(
            self.root, "ls-tree", "-r", "-z", "--full-tree", tree, policy=self.policy
        )
        found: dict[str, _Entry] = {}
        for record in done.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, name = record.partition(b"\t")
            mode, kind, sha = meta.decode().split()
            if kind == "blob":
                found[os.fsdecode(name)] = _Entry(mode=mode, sha=sha)
        return found

    def _blob(self, entry: _Entry) -> str | None:
        data = run_git_bytes(self.root, "cat-file", "blob", entry.sha, policy=self.policy).stdout
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return None

    def _spliced(self, path: str, was: _Entry | None, now: _Entry | None) -> _Entry | None:
        """The entry of mixed file ``path``: the agent's text with the runner's part from the
        base (``was``), or the base's whole when that cannot be done soundly."""
        if now is None:
            return was
        mine = self._blob(now)
        theirs = None if was is None else self._blob(was)
        if mine is None or (was is not None and theirs is None):
            return was
        text = splice(path, theirs, mine)
        if text is None:
            return was
        if text == mine:
            return now
        sha = run_git(
            self.root, "hash-object", "-w", "--stdin", policy=self.policy, input_text=text
        ).stdout.strip()
        return _Entry(mode=now.mode, sha=sha)

    def _tree_with(self, tree: str, changes: dict[str, _Entry | None]) -> str:
        """``tree`` with each path of ``changes`` set to its entry (None: removed)."""
        if not changes:
            return tree
        git = self.git_index
        git("read-tree", tree)
        zero = "0" * len(tree)
        records = b"".join(
            (f"0 {zero}" if e is None else f"{e.mode} {e.sha}").encode()
            + b"\t"
            + os.fsencode(path)
            + b"\0"
            for path, e in changes.items()
        )
        run_git_bytes(
            self.root,
            "update-index",
            "-z",
            "--index-info",
            policy=self.policy,
            input_bytes=records,
            index=self.index,
        )
        return git("write-tree").strip()


@define(kw_only=True)
class GateWorld:
    """The scratch worktree of run ``run_id`` in workspace ``root``, where its pinned gates
    and blocking hooks run; ``policy`` is ralph's git for the run."""

    root: Path
    run_id: str
    policy: GitPolicy
    own: tuple[str, ...]
    """ralph's own files in the work tree (relative): never part of the agent's work, never
    linked into the scratch."""
    index: Path
    """An index file of ralph's own, where the agent's state is read into."""
    _made: bool = field(default=False, init=False)
    _linked: tuple[Path, ...] = field(default=(), init=False)

    @property
    def scratch(self) -> Path:
        """Where the scratch worktree is: beside the main work tree's runs' worktrees."""
        dirs = git_dirs(self.root)
        main = self.root
        if dirs is not None and dirs[1].name == ".git":
            main = dirs[1].parent
        return main.parent / f"{main.name}-worktrees" / f".gates-{self.run_id}"

    @property
    def layering(self) -> Layering:
        """How the person's checks are laid over the agent's state, for this run."""
        return Layering(root=self.root, policy=self.policy, index=self.index)

    def lay_out(
        self, base: str, test_paths: tuple[str, ...], argvs: Iterable[tuple[str, ...]]
    ) -> PinnedWorld | None:
        """The worlds for a check of the agent's current state pinned to commit ``base``,
        with the files ``argvs`` name pinned too; None when the run has no commit yet.
        Raises :class:`GitError` (or ``OSError``) when git cannot tell."""
        head = resolved(self.root, "HEAD^{commit}", self.policy)
        if head is None:
            return None
        return self.layering.world(base, head, self._agent_tree(), test_paths, argvs)

    def show(self, world: PinnedWorld, tree: str) -> Path:
        """The scratch worktree holding ``tree`` (one of ``world``'s), its ``HEAD`` the run's,
        the work tree's ignored top-level folders linked in; its path."""
        scratch = self.scratch
        if not self._made:
            self._fresh(scratch, world.head)
        self.layering.show(scratch, world, tree)
        # Showing cleaned the scratch, links and all: what is linked now is all there is.
        self._linked = link_ignored(self.root, scratch, self.policy, self.own)
        return scratch

    def linked(self) -> tuple[Path, ...]:
        """The work tree's folders linked into the scratch (a sandboxed gate is given them)."""
        return self._linked

    def drop(self) -> None:
        """Remove the scratch worktree (the run has ended), whatever state it is in."""
        self._made, self._linked = False, ()
        drop_scratch(self.root, self.scratch)
        with contextlib.suppress(FileNotFoundError):
            self.index.unlink()

    def _fresh(self, scratch: Path, head: str) -> None:
        """Made anew: what an earlier process (a crash, a kill) left there is never reused."""
        self._made = False
        with contextlib.suppress(FileNotFoundError):
            self.index.unlink()
        fresh_scratch(self.root, scratch, head, self.policy)
        self._made = True

    def _agent_tree(self) -> str:
        """The tree of the work tree as the agent left it: tracked files as they are now,
        untracked ones that are not ignored, none of ralph's own."""
        dirs = git_dirs(self.root)
        self.index.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.index.unlink()
        if dirs is not None and (dirs[0] / "index").is_file():
            # The worktree's index knows which files are unchanged since git last read them:
            # only the changed ones are read again. copy2 keeps the index's time: git reads a
            # file again when it changed in the same second as the index was written ("racily
            # clean"), which a copy stamped now would hide (a same-size edit went unseen).
            shutil.copy2(dirs[0] / "index", self.index)
        git = self.layering.git_index
        gitlinks = gitlink_excludes(git("ls-files", "--stage", "-z"))
        git("add", "-A", "--", ".", *own_pathspecs(self.own), *gitlinks)
        git("rm", "--cached", "-r", "-q", "--ignore-unmatch", "--", *OWN_FOLDERS)
        return git("write-tree").strip()


@final
@frozen(kw_only=True)
class CommitWorld:
    """The world of a commit's tree, shown in a scratch worktree somebody else made: the
    merge queue's, where the agent's state is the replayed ``head`` (a landing takes commits
    only) and the person's checks come from the target's head. ``prepare`` is given the
    scratch once the world is shown (what the run's worktree has that no commit holds: an
    untracked gate script); ralph's own folder there is kept, the gate's log being in it."""

    layering: Layering
    scratch: Path
    head: str
    prepare: Callable[[Path], None] = lambda _scratch: None

    def lay_out(
        self, base: str, test_paths: tuple[str, ...], argvs: Iterable[tuple[str, ...]]
    ) -> PinnedWorld:
        """The worlds of ``head``'s tree pinned to commit ``base``. Raises :class:`GitError`."""
        layering = self.layering
        tree = run_git(
            layering.root, "rev-parse", f"{self.head}^{{tree}}", policy=layering.policy
        ).stdout.strip()
        layering.index.parent.mkdir(parents=True, exist_ok=True)
        return layering.world(base, self.head, tree, test_paths, argvs)

    def show(self, world: PinnedWorld, tree: str) -> Path:
        """The scratch holding ``tree``, prepared; its path."""
        self.layering.show(self.scratch, world, tree, keep=(OWN_FOLDERS[0],))
        self.prepare(self.scratch)
        return self.scratch

    def linked(self) -> tuple[Path, ...]:
        """None: the scratch links nothing in."""
        return ()

    def drop(self) -> None:
        """The index file goes; the scratch is the landing's, which drops it."""
        with contextlib.suppress(FileNotFoundError):
            self.layering.index.unlink()


@final
@frozen(kw_only=True)
class Pinning:
    """Where a run's pinned gates and blocking hooks run: its scratch ``world``, in the
    sandbox ``choice`` made for the run's ``config`` (None: directly)."""

    world: World
    choice: SandboxChoice | None
    config: RalphConfig

    def sandbox_in(self, scratch: Path) -> Sandbox | None:
        """The sandbox of a process whose workspace is the scratch ``scratch`` (None: no
        sandbox)."""
        if self.choice is None:
            return None
        return self.choice.sandbox(WorkspaceLayout(root=scratch), self.config, None, ())

    def needs(self, needs: AgentNeeds) -> AgentNeeds:
        """``needs`` with the work tree's folders linked into the scratch writable, as they
        are in the work tree."""
        linked = tuple(str(p) for p in self.world.linked())
        return attrs.evolve(needs, write=(*needs.write, *linked))
