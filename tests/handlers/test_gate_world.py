"""The pinned gates' scratch world (``GateWorld``) in a real git repository: what it links in
from the work tree, which a sandboxed gate is then given writable."""

from __future__ import annotations

import os
from pathlib import Path

from pipeline.handlers.runtime import GitPolicy
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
