"""The pinned gates' scratch world (``GateWorld``) in a real git repository: what it links in
from the work tree, which a sandboxed gate is then given writable; and dropping a scratch
worktree, whatever state it was left in."""

from __future__ import annotations

import os
import resource
import shutil
from pathlib import Path

from pipeline.handlers.runtime import GitPolicy, drop_scratch, fresh_scratch
from pipeline.handlers.runtime._pinned import GateWorld
from tests.runtime.workspace import commit_all, git
from tests.support import init_repository


def test_only_what_ralph_linked_into_the_scratch_counts_as_linked(tmp_path: Path) -> None:
    """The work tree's ignored ``node_modules`` is linked into the scratch and counts as
    linked; a link to the work tree's ``.git`` that the agent committed is in the scratch too,
    but is not taken for one of ralph's links (which would make ``.git`` writable to a
    sandboxed gate)."""
    root = tmp_path / "repo"
    init_repository(root)
    (root / ".gitignore").write_text("node_modules/\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("module.exports = 1\n")
    os.symlink(root.resolve() / ".git", root / "planted")
    commit_all(root, "a committed link into the work tree's git folder")
    world = GateWorld(
        root=root, run_id="run-1", policy=GitPolicy(), own=(), index=tmp_path / "gate-index"
    )
    laid = world.lay_out(git(root, "rev-parse", "HEAD"), (), ())
    assert laid is not None
    scratch = world.show(laid, laid.person)
    assert (scratch / "planted").is_symlink(), "the committed link is part of the world"
    assert world.linked() == (root.resolve() / "node_modules",)
    world.drop()
    assert not scratch.exists()


def test_dropping_a_scratch_that_was_never_made_runs_no_git(tmp_path: Path) -> None:
    """Every run's end drops its gates' scratch: in a repository with no linked worktree and
    nothing at the scratch's path there is nothing to drop, and no git process is started
    to find that out (no child of this process was waited for: any would have taken page
    faults)."""
    root = init_repository(tmp_path / "repo")
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    drop_scratch(root, tmp_path / "repo-worktrees" / ".gates-run-1")
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt == before


def test_a_scratch_a_killed_worktree_add_left_locked_is_dropped(tmp_path: Path) -> None:
    """A scratch whose folder is gone but which git still holds locked (a ``worktree add``
    killed half-way) is unlocked and pruned, so a new scratch can be made at its path."""
    root = init_repository(tmp_path / "repo")
    (root / "a.txt").write_text("a\n")
    commit_all(root, "a")
    scratch = tmp_path / "repo-worktrees" / ".gates-run-1"
    git(root, "worktree", "add", "--detach", str(scratch), "HEAD")
    git(root, "worktree", "lock", "--reason", "initializing", str(scratch))
    shutil.rmtree(scratch)
    drop_scratch(root, scratch)
    assert str(scratch) not in git(root, "worktree", "list", "--porcelain")
    fresh_scratch(root, scratch, git(root, "rev-parse", "HEAD"))
    assert (scratch / "a.txt").read_text() == "a\n"
