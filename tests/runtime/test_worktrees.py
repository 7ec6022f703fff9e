"""``ralph run --worktree`` and ``ralph worktrees``: runs of one repository at once, each in a
git worktree of its own on a branch of its own with its own log; listed with their runs, their
changes shown, and removed only once merged (or forced), never while a run holds them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _listed(root: Path) -> list[dict[str, object]]:
    shown = ralph("worktrees", "list", "--json", "-C", str(root), cwd=root)
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()]


def _workspace(tmp_path: Path, extra: str = "") -> Path:
    return make_workspace(
        tmp_path / "repo",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml")},
        extra=extra,
    )


def test_two_runs_of_one_repository_go_on_at_once_in_worktrees_of_their_own(
    tmp_path: Path,
) -> None:
    root = _workspace(tmp_path)
    head = _git(root, "rev-parse", "HEAD")
    runs = [start_ralph("run", "--worktree", "--plain", cwd=root) for _ in range(2)]
    for process in runs:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, out + err
        assert "Worktree: " in err
    listed = _listed(root)
    assert len(listed) == 2
    for entry in listed:
        assert entry["phase"] == "completed"
        assert entry["ahead"] == 1  # the run's one commit
        assert (entry["merged"], entry["busy"]) == (False, False)
        path = Path(str(entry["path"]))
        assert path.parent == root.parent / "repo-worktrees"
        assert _git(path, "rev-parse", "--abbrev-ref", "HEAD") == entry["branch"]
        with SqliteEventStore(WorkspaceLayout(path).store) as store:
            assert [r.run_id for r in store.runs()] == [entry["run"]]  # its own log
        verified = ralph("replay", "--verify", cwd=path)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # The workspace itself: untouched.
    assert _git(root, "rev-parse", "HEAD") == head
    assert not (root / "work.txt").exists()
    assert not WorkspaceLayout(root).store.exists()
    first, second = listed
    shown = ralph("worktrees", "diff", str(first["name"]), cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "+++ b/work.txt" in shown.stdout
    assert "+done" in shown.stdout
    # Nothing unmerged is removed without --force.
    refused = ralph("worktrees", "clean", str(first["name"]), cwd=root)
    assert refused.returncode == 2
    assert "1 commit(s) HEAD lacks" in refused.stderr
    idle = ralph("worktrees", "clean", cwd=root)
    assert idle.returncode == 0
    assert "Nothing to remove" in idle.stderr
    # Once HEAD holds a branch's commits, clean removes its worktree and branch.
    _git(root, "merge", "--quiet", "--ff-only", str(first["branch"]))
    cleaned = ralph("worktrees", "clean", cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"Removed {first['path']}" in cleaned.stderr
    assert not Path(str(first["path"])).exists()
    assert [e["name"] for e in _listed(root)] == [second["name"]]
    assert str(first["branch"]) not in _git(root, "branch", "--list")
    forced = ralph("worktrees", "clean", str(second["branch"]), "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert _listed(root) == []
    unknown = ralph("worktrees", "diff", "nobody", cwd=root)
    assert unknown.returncode == 2
    assert "no worktree of ralph's named 'nobody'" in unknown.stderr


def test_a_worktree_run_that_cannot_start_leaves_no_worktree(tmp_path: Path) -> None:
    """``[run] worktree = true`` makes every run's worktree; one that cannot start (its
    prompt file is missing) leaves neither the worktree nor its branch."""
    root = _workspace(tmp_path, extra="[run]\nworktree = true\n")
    refused = ralph("run", "--prompt-file", str(tmp_path / "missing.md"), cwd=root)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "missing.md does not exist" in refused.stderr
    assert _listed(root) == []
    assert "ralph/run-" not in _git(root, "branch", "--list")
    assert len(_git(root, "worktree", "list").splitlines()) == 1
    started = ralph("run", "--quiet", cwd=root)
    assert started.returncode == 0, started.stdout + started.stderr
    (entry,) = _listed(root)
    assert entry["phase"] == "completed"
