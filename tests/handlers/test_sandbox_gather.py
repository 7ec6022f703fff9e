"""The host's side of the mount plan, on real folders: which siblings of a workspace are
repositories the sandbox hides."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.handlers.sandbox._gather import other_repositories
from tests.support import init_repository


def test_other_repositories_hides_bare_siblings(tmp_path: Path) -> None:
    """A bare repository beside the workspace (a worker's cache) is hidden as a sibling with a
    ``.git`` is, while a folder that only looks partly like one (a ``HEAD`` file and no
    ``objects/``) and the workspace itself are not."""
    workspace = init_repository(tmp_path / "t-one")
    other = init_repository(tmp_path / "t-other")
    cache = tmp_path / "remote-x.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(cache)], check=True)
    notes = tmp_path / "notes"
    (notes / "refs").mkdir(parents=True)
    (notes / "HEAD").write_text("not a repository\n")

    found = other_repositories(workspace, workspace / ".git")

    assert sorted(found) == sorted([str(cache.resolve()), str(other.resolve())])
