"""A landing (``ralph worktrees merge``, ``ralph run --merge``) stopped at any step, by kill -9
or by a signal, leaves nothing lost, wedged or running: the next command finishes it, and
the target, its work tree and the run's log agree."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from pipeline.app.cli._faults import FAULT_ENV
from pipeline.events import TargetAdvanced
from tests.faults.landings import (
    completed_runs,
    gate,
    git,
    landing_repository,
    log_of,
    stopped_merge,
)
from tests.runtime.workspace import (
    listed_worktrees,
    processes_with,
    ralph,
    ralph_on_a_full_disk,
    start_ralph,
    wait_for,
)

pytestmark = pytest.mark.slow  # whole runs and merges in subprocesses


def _landed_once(root: Path, worktree: dict[str, object]) -> None:
    """The run's log holds one landing, the target holds its file, the work tree is clean."""
    moves = [f for f in log_of(worktree) if isinstance(f, TargetAdvanced)]
    assert len(moves) == 1, moves
    assert git(root, "merge-base", "--is-ancestor", moves[0].new, "main") == ""
    assert git(root, "status", "--porcelain") == ""
    name = str(worktree["name"])
    assert (root / f"{name}.txt").is_file()
    assert f"{name}.txt" in git(root, "ls-tree", "--name-only", "main").split()


def _person_commits(root: Path) -> None:
    """A person commits one file of theirs on main, that file only (``git commit -- FILE``:
    what they staged meanwhile stays out)."""
    (root / "person.txt").write_text("mine\n")
    git(root, "add", "person.txt")
    git(root, "commit", "--quiet", "-m", "the person's file", "--", "person.txt")


def _another_lands(root: Path) -> None:
    """Another landing moves main on, as ralph's does: a commit on it, compare-and-swap, and
    the work tree follows by a two-tree read (which keeps what the index had elsewhere)."""
    head = git(root, "rev-parse", "main")
    blob = subprocess.run(
        ["git", "hash-object", "-w", "--stdin"],
        cwd=root,
        input="landed by another\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    index = root / ".git" / "other-index"
    env_index = {"GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", head], cwd=root, env=env_index, check=True)
    subprocess.run(
        ["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},other.txt"],
        cwd=root,
        env=env_index,
        check=True,
    )
    tree = subprocess.run(
        ["git", "write-tree"], cwd=root, env=env_index, capture_output=True, text=True, check=True
    ).stdout.strip()
    index.unlink()
    new = git(root, "commit-tree", "-p", head, "-m", "another landing", tree)
    git(root, "update-ref", "refs/heads/main", new, head)
    git(root, "read-tree", "-m", "-u", head, new)


@pytest.mark.parametrize("then", [_person_commits, _another_lands], ids=["commit", "landing"])
def test_a_kill_after_the_swap_then_a_commit_on_the_target_keeps_the_landed_files(
    tmp_path: Path, then: object
) -> None:
    """Killed right after the compare-and-swap, main then moved on by a person's commit or
    another landing: the next merge brings the main work tree up for the landed files, and
    a person's ordinary commit afterwards keeps them."""
    root = landing_repository(tmp_path)
    (only,) = completed_runs(root, 1)
    name = str(only["name"])
    killed = stopped_merge(root, tmp_path, "worktrees", "merge", name, after="update-ref -m")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    # The target moved, the work tree did not follow: the landed file a staged deletion.
    assert f"D  {name}.txt" in git(root, "status", "--porcelain").splitlines()
    assert callable(then)
    then(root)
    resumed = ralph("worktrees", "merge", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"Landed {only['branch']} on main" in resumed.stderr
    _landed_once(root, only)
    (root / "later.txt").write_text("later\n")
    git(root, "add", "later.txt")
    git(root, "commit", "--quiet", "-m", "a later commit")
    assert f"{name}.txt" in git(root, "ls-tree", "--name-only", "main").split()
    assert git(root, "status", "--porcelain") == ""


def test_a_person_change_in_a_landed_file_stops_the_merge_for_the_person(tmp_path: Path) -> None:
    """Killed right after the swap, main moved on, and a person edited a file the landing
    changed: the merge touches nothing, says what to do and records no landing; once the
    person brought the file up, the next merge lands."""
    root = landing_repository(tmp_path)
    (only,) = completed_runs(root, 1)
    name = str(only["name"])
    killed = stopped_merge(root, tmp_path, "worktrees", "merge", name, after="update-ref -m")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    _person_commits(root)
    (root / f"{name}.txt").write_text("the person's own\n")
    held = ralph("worktrees", "merge", cwd=root)
    assert held.returncode == 1, held.stdout + held.stderr
    assert f"{name}.txt" in held.stderr
    assert "git checkout main --" in held.stderr
    assert (root / f"{name}.txt").read_text() == "the person's own\n"
    assert not [f for f in log_of(only) if isinstance(f, TargetAdvanced)]
    git(root, "checkout", "main", "--", f"{name}.txt")
    resumed = ralph("worktrees", "merge", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _landed_once(root, only)


def test_a_kill_inside_the_scratch_worktree_add_does_not_wedge_the_queue(tmp_path: Path) -> None:
    """Killed while ``git worktree add`` makes the scratch worktree (left locked,
    "initializing", with an ``index.lock``): the next merge removes it, makes it anew and
    lands."""
    root = landing_repository(tmp_path, files=1000)
    (only,) = completed_runs(root, 1)
    name = str(only["name"])
    half_made = str(root / ".git" / "worktrees" / "*integration-*" / "index.lock")
    killed = stopped_merge(
        root, tmp_path, "worktrees", "merge", name, after="worktree add", when=half_made
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "locked" in git(root, "worktree", "list", "--porcelain")
    resumed = ralph("worktrees", "merge", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"Landed {only['branch']} on main" in resumed.stderr
    _landed_once(root, only)
    assert "integration" not in git(root, "worktree", "list", "--porcelain")


def _beats(heartbeat: Path) -> int:
    return len(heartbeat.read_text().splitlines()) if heartbeat.exists() else 0


def test_the_next_merge_ends_a_gate_a_killed_integrator_left_running(tmp_path: Path) -> None:
    """An integrator killed while its gate runs (the gate beats every 0.1 s): whatever of the
    gate is left (its reaper ends it with the integrator, or it beats on), the next merge
    lands, and nothing of the gate is left beating."""
    heartbeat = tmp_path / "heartbeat"
    marker = f"ralph-test-gate-{tmp_path.name}"
    script = (
        f"# {marker}\n"
        f'if [ -e "{tmp_path}/gated-once" ]; then exit 0; fi\n'
        f'touch "{tmp_path}/gated-once"\n'
        f'while :; do echo beat >> "{heartbeat}"; sleep 0.1; done\n'
    )
    root = landing_repository(tmp_path, gate("beating", script))
    (tmp_path / "gated-once").touch()  # the run's own final gate passes at once
    (only,) = completed_runs(root, 1)
    (tmp_path / "gated-once").unlink()
    name = str(only["name"])
    # Killed once its gate beats (not a time after the rebase, which a loaded machine may
    # spend laying out the scratch before the gate starts); it beats until killed.
    killed = start_ralph("worktrees", "merge", name, cwd=root)
    try:
        wait_for(lambda: _beats(heartbeat) > 0, "the gate never ran", alive=killed)
        killed.send_signal(signal.SIGKILL)
        _out, err = killed.communicate(timeout=60)
    finally:
        killed.kill()
    assert killed.returncode == -signal.SIGKILL, err
    # The gate ran when the integrator was killed; its reaper may end it at once (the parent-
    # death signal), or it may still beat: either way the next merge leaves nothing running.
    resumed = ralph("worktrees", "merge", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _landed_once(root, only)
    beats = _beats(heartbeat)
    time.sleep(0.5)
    assert _beats(heartbeat) == beats, "the killed integrator's gate still beats"
    assert not processes_with(marker)


@pytest.mark.parametrize(
    "command", [("worktrees", "merge"), ("run", "--merge", "--quiet")], ids=["merge", "run"]
)
def test_sigterm_during_a_landing_exits_130_and_the_next_command_finishes_it(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    """SIGTERM while a landing's gate runs: the landing stops at once (exit 130), says how to
    go on, leaves no gate running and main untouched; the command it names lands the run."""
    marker = f"ralph-test-slow-gate-{tmp_path.name}"
    # The gate is slow only in a landing's scratch worktree while ``slow`` exists: the landing
    # SIGTERM stops, and no other gate run (the run's own before it, the next command's after)
    # waits out its seconds.
    slow = tmp_path / "slow"
    script = (
        'case "$PWD" in */.integration-*) ;; *) exit 0 ;; esac\n'
        f"[ -e '{slow}' ] || exit 0\nexec python3 -c 'import time; time.sleep(3)' {marker}\n"
    )
    root = landing_repository(tmp_path, gate("slow", script))
    before = git(root, "rev-parse", "main")
    point = "integration.integration_rebased:1:SIGTERM:0.5"
    if command[0] == "worktrees":
        (only,) = completed_runs(root, 1)
        args = (*command, str(only["name"]))
    else:
        args = command
    slow.touch()
    started = time.monotonic()
    stopped = ralph(*args, cwd=root, env={FAULT_ENV: point})
    slow.unlink()
    assert stopped.returncode == 130, stopped.stdout + stopped.stderr
    assert time.monotonic() - started < 60
    (only,) = listed_worktrees(root)
    assert f"ralph worktrees merge {only['name']}" in stopped.stderr
    assert git(root, "rev-parse", "main") == before
    assert git(root, "status", "--porcelain") == ""
    assert not processes_with(marker)
    resumed = ralph("worktrees", "merge", str(only["name"]), cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _landed_once(root, only)


_LIMIT = 8_000
"""Bytes a file the merge writes may grow to: the run's log (its write-ahead log) passes it
with the landing's first fact."""


def test_a_merge_on_a_full_disk_says_to_free_space_and_merge_again(tmp_path: Path) -> None:
    """A merge whose run's log cannot grow exits 4 naming the full disk and saying to free
    space and merge again (never to resume a run); with room, the merge it names lands."""
    root = landing_repository(tmp_path)
    (only,) = completed_runs(root, 1)
    stopped = ralph_on_a_full_disk(
        "worktrees", "merge", str(only["name"]), cwd=root, limit_bytes=_LIMIT
    )
    assert stopped.returncode == 4, stopped.stdout + stopped.stderr
    assert "free space" in stopped.stderr
    assert "ralph worktrees merge again" in stopped.stderr
    assert "resume the run" not in stopped.stderr
    assert "Traceback" not in stopped.stderr
    resumed = ralph("worktrees", "merge", str(only["name"]), cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    _landed_once(root, only)
