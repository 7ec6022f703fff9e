"""``ralph run --worktree`` and ``ralph worktrees``: runs of one repository at once, each in a
git worktree of its own on a branch of its own with its own log; listed with their runs, their
changes shown, and removed only once merged (or forced), never while a run holds them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    ROOT,
    git,
    listed_worktrees,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses


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
    head = git(root, "rev-parse", "HEAD")
    runs = [start_ralph("run", "--worktree", "--plain", cwd=root) for _ in range(2)]
    for process in runs:
        out, err = process.communicate(timeout=180)
        assert process.returncode == 0, out + err
        assert "Worktree: " in err
    listed = listed_worktrees(root, "-C", str(root))
    assert len(listed) == 2
    for entry in listed:
        assert entry["phase"] == "completed"
        assert entry["ahead"] == 1  # the run's one commit
        assert (entry["merged"], entry["busy"]) == (False, False)
        path = Path(str(entry["path"]))
        assert path.parent == root.parent / "repo-worktrees"
        assert git(path, "rev-parse", "--abbrev-ref", "HEAD") == entry["branch"]
        with SqliteEventStore(WorkspaceLayout(root=path).store) as store:
            assert [r.run_id for r in store.runs()] == [entry["run"]]  # its own log
        verified = ralph("replay", "--verify", cwd=path)
        assert verified.returncode == 0, verified.stdout + verified.stderr
    # The workspace itself: untouched.
    assert git(root, "rev-parse", "HEAD") == head
    assert not (root / "work.txt").exists()
    assert not WorkspaceLayout(root=root).store.exists()
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
    git(root, "merge", "--quiet", "--ff-only", str(first["branch"]))
    cleaned = ralph("worktrees", "clean", cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert f"Removed {first['path']}" in cleaned.stderr
    assert not Path(str(first["path"])).exists()
    assert [e["name"] for e in listed_worktrees(root, "-C", str(root))] == [second["name"]]
    assert str(first["branch"]) not in git(root, "branch", "--list")
    forced = ralph("worktrees", "clean", str(second["branch"]), "--force", cwd=root)
    assert forced.returncode == 0, forced.stderr
    assert listed_worktrees(root, "-C", str(root)) == []
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
    assert listed_worktrees(root, "-C", str(root)) == []
    assert "ralph/run-" not in git(root, "branch", "--list")
    assert len(git(root, "worktree", "list").splitlines()) == 1
    started = ralph("run", "--quiet", cwd=root)
    assert started.returncode == 0, started.stdout + started.stderr
    (entry,) = listed_worktrees(root, "-C", str(root))
    assert entry["phase"] == "completed"


def test_worktrees_are_kept_safe_from_clean_and_from_hostile_text(tmp_path: Path) -> None:
    """A worktree a run holds, an unended fork and a run stopped before it ended are not
    cleaned; the commands refuse a linked worktree as their workspace; a diff runs no
    program the repository configures, shows an agent's control characters escaped and
    survives bytes that are no UTF-8; a worktree cannot start from an edited ralph.toml, and
    a preset that does not exist leaves none behind."""
    from pipeline.app.workspace._lock import hold_workspace

    root = _workspace(tmp_path)
    made = ralph("run", "--worktree", "--quiet", cwd=root)
    assert made.returncode == 0, made.stdout + made.stderr
    (entry,) = listed_worktrees(root, "-C", str(root))
    path = Path(str(entry["path"]))
    # The branch gets hostile bytes; HEAD takes the branch, so it counts as merged.
    (path / "odd.txt").write_bytes(b"\x1b]0;title\x07 caf\xe9\n")
    git(path, "add", "odd.txt")
    git(path, "commit", "--quiet", "-m", "odd")
    marker = tmp_path / "external-diff-ran"
    git(root, "config", "diff.external", f"sh -c 'touch {marker}'")
    shown = ralph("worktrees", "diff", str(entry["name"]), cwd=root)
    assert shown.returncode == 0, shown.stderr
    assert "\x1b" not in shown.stdout
    assert "\\x1b]0;title\\x07 caf\ufffd" in shown.stdout
    assert "\n+++ b/odd.txt\n" in shown.stdout  # lines stay lines
    assert not marker.exists(), "git diff ran the repository's external diff program"
    git(root, "config", "--unset", "diff.external")
    git(root, "merge", "--quiet", "--ff-only", str(entry["branch"]))
    # A run holding the worktree: never removed, not even by name with --force.
    with hold_workspace(WorkspaceLayout(root=path).ralph_dir):
        (busy,) = listed_worktrees(root, "-C", str(root))
        assert busy["busy"] is True
        for args in ([], [str(entry["name"]), "--force"]):
            kept = ralph("worktrees", "clean", *args, cwd=root)
            assert path.is_dir(), kept.stderr
        assert "a run is at work in" in kept.stderr
    # A fork of its run, not yet resumed: listed, and not cleaned.
    fork = tmp_path / "fork"
    forked = ralph("fork", "--at", "10", "--to", str(fork), cwd=path)
    assert forked.returncode == 0, forked.stderr
    listed = {Path(str(e["path"])): e for e in listed_worktrees(root, "-C", str(root))}
    assert str(listed[fork.resolve()]["branch"]).startswith("ralph/fork-")
    assert listed[fork.resolve()]["merged"] is True  # nothing new on its branch yet
    cleaned = ralph("worktrees", "clean", cwd=root)
    assert cleaned.returncode == 0, cleaned.stderr
    assert fork.is_dir(), "a fork that could still be resumed was removed"
    assert not path.exists(), "the merged worktree whose run ended stays"
    named = ralph("worktrees", "clean", str(fork), cwd=root)
    assert named.returncode == 2
    assert "has not ended" in named.stderr
    # From a linked worktree: refused, pointing at the main one.
    inside = ralph("worktrees", "list", "-C", str(fork), cwd=root)
    assert inside.returncode == 2
    assert "is a linked worktree: run this from" in inside.stderr
    # An edited ralph.toml does not go with a worktree from HEAD: refused.
    with (root / "ralph.toml").open("a") as config:
        config.write("\n# edited\n")
    edited = ralph("run", "--worktree", cwd=root)
    assert edited.returncode == 2
    assert "changes HEAD lacks" in edited.stderr
    git(root, "checkout", "--quiet", "--", "ralph.toml")
    unknown = ralph("run", "--worktree", "--preset", "no-such-preset", cwd=root)
    assert unknown.returncode == 2, unknown.stdout + unknown.stderr
    assert {Path(str(e["path"])) for e in listed_worktrees(root, "-C", str(root))} == {
        fork.resolve()
    }


def test_a_tickets_worktree_left_half_made_by_an_older_release_is_made_anew(
    tmp_path: Path,
) -> None:
    """A ticket's worktree as a kill inside a plain ``git worktree add`` leaves it (locked
    ``initializing``, ``index.lock`` left, files missing) is never found again as the ticket's:
    ``ticket_worktree`` removes it and makes it whole, on the ticket's branch."""
    from pipeline.app.workspace import run_worktrees, ticket_worktree

    root = _workspace(tmp_path)
    folder = tmp_path / "repo-worktrees" / "t-1"
    git(root, "worktree", "add", "--quiet", "--lock", "--reason", "initializing",
         "-b", "ralph/run-t-1", str(folder), "HEAD")  # fmt: skip
    (folder / "README.md").unlink()
    (root / ".git" / "worktrees" / "t-1" / "index.lock").touch()
    (half,) = run_worktrees(root)
    assert half.half_made
    assert half.removable, "never used: clean removes it"
    assert (half.phase, half.busy) == ("half-made", False)
    assert ticket_worktree(root, "t-1") == folder.resolve()
    assert (folder / "README.md").read_text() == "a repository\n"
    assert git(folder, "status", "--porcelain", "--untracked-files=no") == ""
    assert "locked" not in git(root, "worktree", "list", "--porcelain")
    (whole,) = run_worktrees(root)
    assert (whole.half_made, whole.branch) == (False, "ralph/run-t-1")


def test_a_half_made_worktree_git_keeps_is_a_half_made_error(tmp_path: Path) -> None:
    """A ticket's half-made worktree that git will not let go of (its ``worktree remove`` and
    ``prune`` refused) raises ``HalfMadeError``, which a queue worker gives back to try again
    later, not a plain ``WorktreeError``, which fails the ticket."""
    root = _workspace(tmp_path)
    folder = tmp_path / "repo-worktrees" / "t-1"
    git(root, "worktree", "add", "--quiet", "--lock", "--reason", "initializing",
        "-b", "ralph/run-t-1", str(folder), "HEAD")  # fmt: skip
    real = shutil.which("git")
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(
        "#!/bin/sh\n"
        'for word in "$@"; do case "$word" in remove|prune) echo refused >&2; exit 1;; esac; done\n'
        f'exec "{real}" "$@"\n'
    )
    shim.chmod(0o755)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from pipeline.app.workspace import WorktreeError, ticket_worktree\n"
        "try:\n"
        "    ticket_worktree(Path(sys.argv[1]), 't-1')\n"
        "except WorktreeError as error:\n"
        "    print(type(error).__name__, error)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{shim.parent}:{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(root)], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.stdout.startswith("HalfMadeError the half-made worktree"), done.stdout + done.stderr


def test_a_symlink_planted_at_the_worktrees_lock_is_refused_not_followed(tmp_path: Path) -> None:
    """A symlink planted at ``ralph-worktrees.lock`` in the git folder (the makers' turn) is
    refused, never opened through: making a worktree fails with a ``WorktreeError``, the
    link's target is not created, and no worktree is made; the integrators' lock, taken the
    same way, refuses one too."""
    from pipeline.app.workspace import WorktreeError, new_worktree
    from pipeline.app.workspace._worktrees import git_folder_lock

    root = _workspace(tmp_path)
    aim = tmp_path / "elsewhere"
    (root / ".git" / "ralph-worktrees.lock").symlink_to(aim)
    with pytest.raises(WorktreeError, match="cannot take the turn to make worktrees"):
        new_worktree(root)
    assert not aim.exists(), "the lock was opened through the planted link"
    assert not (tmp_path / "repo-worktrees").exists()
    (root / ".git" / "ralph-integration.lock").symlink_to(aim)
    with (
        pytest.raises(OSError, match="symbolic links"),
        git_folder_lock(root, "ralph-integration.lock"),
    ):
        pass
    assert not aim.exists()
