"""The merge queue's git steps on real repositories: the target moves only by
compare-and-swap, a move interrupted half-way is finished by doing it again, and nothing
moves when the world is not as the integration left it."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from pipeline.core.state import Integration, IntegrationStatus
from pipeline.events import (
    Instant,
    IntegrationFailed,
    IntegrationRebased,
    PipelineEvent,
    TargetAdvanced,
    TargetMoved,
)
from pipeline.handlers.integration._move import move_target
from pipeline.handlers.integration._replay import RunCommits, foreign_commits, replay_branch
from pipeline.handlers.runtime import GitPolicy

AT = Instant(datetime(2026, 11, 27, tzinfo=UTC))


def _clock() -> Instant:
    return AT


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def _repository(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository on ``main`` and a branch ``ralph/run-x`` one commit ahead (with its
    ``Ralph-Effect`` trailer), checked out in a worktree of its own; main's head and the
    branch's."""
    root = tmp_path / "repo"
    root.mkdir()
    for args in (
        ["init", "--quiet", "--initial-branch", "main"],
        ["config", "user.name", "test"],
        ["config", "user.email", "test@example.invalid"],
    ):
        _git(root, *args)
    (root / "a.txt").write_text("a\n")
    _git(root, "add", "a.txt")
    _git(root, "commit", "--quiet", "-m", "start")
    worktree = tmp_path / "run-x"
    _git(root, "worktree", "add", "--quiet", "-b", "ralph/run-x", str(worktree))
    (worktree / "b.txt").write_text("b\n")
    _git(worktree, "add", "b.txt")
    _git(worktree, "commit", "--quiet", "-m", "work", "-m", "Ralph-Effect: x:7")
    return root, _git(root, "rev-parse", "main"), _git(root, "rev-parse", "ralph/run-x")


def _replayed(root: Path, tmp_path: Path, last: str | None) -> tuple[PipelineEvent, ...]:
    """The replay of the run whose log records one commit, ``last``, for effect ``x:7``."""
    made = RunCommits(run_id="x", commits=() if last is None else (("x:7", last),))
    queued = Integration(branch="ralph/run-x", target="main")
    return replay_branch(queued, last, root, tmp_path / "scratch", GitPolicy(), _clock, made)


def _move(root: Path, tmp_path: Path, old: str, new: str, tip: str) -> tuple[PipelineEvent, ...]:
    replayed = Integration(
        branch="ralph/run-x",
        target="main",
        status=IntegrationStatus.REPLAYED,
        onto=old,
        head=new,
        tip=tip,
    )
    return move_target(replayed, root, tmp_path / "scratch", _clock)


def test_a_move_killed_after_the_swap_is_finished_by_doing_it_again(tmp_path: Path) -> None:
    root, start, tip = _repository(tmp_path)
    (main_moved,) = _replayed_onto_new_main(root, tmp_path)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)
    assert rebased.onto == main_moved != start
    # The integrator died right after `git update-ref`: the work tree is still at the old.
    _git(root, "update-ref", "refs/heads/main", rebased.head, rebased.onto)
    assert _git(root, "status", "--porcelain") != ""
    (advanced,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert advanced == TargetAdvanced(target="main", old=rebased.onto, new=rebased.head, at=AT)
    assert _git(root, "status", "--porcelain") == ""
    assert (root / "b.txt").read_text() == "b\n"
    assert _git(root, "rev-parse", "ralph/run-x") == rebased.head
    assert _git(tmp_path / "run-x", "status", "--porcelain") == ""
    assert (tmp_path / "run-x" / "c.txt").is_file()  # the run's worktree followed too
    # And once more (killed before its fact was stored): the same, nothing else moves.
    (again,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert again == advanced
    assert _git(root, "rev-parse", "main") == rebased.head
    assert not (tmp_path / "scratch").exists()


def _replayed_onto_new_main(root: Path, tmp_path: Path) -> tuple[str]:
    """Move main on by a person's commit (c.txt), so a replay is needed."""
    (root / "c.txt").write_text("c\n")
    _git(root, "add", "c.txt")
    _git(root, "commit", "--quiet", "-m", "a person's commit")
    return (_git(root, "rev-parse", "main"),)


def test_a_target_moved_by_someone_else_is_reported_not_overwritten(tmp_path: Path) -> None:
    root, start, tip = _repository(tmp_path)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)
    assert (rebased.onto, rebased.head) == (start, tip)  # already on main: nothing replayed
    elsewhere = _replayed_onto_new_main(root, tmp_path)[0]
    (moved,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert moved == TargetMoved(expected=start, found=elsewhere, at=AT)
    assert _git(root, "rev-parse", "main") == elsewhere
    assert _git(root, "rev-parse", "ralph/run-x") == tip


def test_a_work_tree_with_changes_in_the_way_stops_the_move_before_it(tmp_path: Path) -> None:
    root, start, tip = _repository(tmp_path)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)
    (root / "b.txt").write_text("a person's own b\n")  # untracked, where the merge writes
    (failed,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert isinstance(failed, IntegrationFailed)
    assert "commit or stash them" in failed.reason
    assert _git(root, "rev-parse", "main") == start
    assert (root / "b.txt").read_text() == "a person's own b\n"
    assert _git(root, "rev-parse", "ralph/run-x") == tip


def test_a_branch_that_lost_the_runs_last_commit_is_refused(tmp_path: Path) -> None:
    root, start, tip = _repository(tmp_path)
    _git(tmp_path / "run-x", "reset", "--quiet", "--hard", start)  # the work is gone
    (failed,) = _replayed(root, tmp_path, tip)
    assert isinstance(failed, IntegrationFailed)
    assert f"no longer holds {tip[:12]}" in failed.reason
    # A person's rebase keeps the effect's commit under a new id: that is still the run's.
    _git(tmp_path / "run-x", "cherry-pick", tip)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)


def test_a_work_tree_that_cannot_follow_puts_the_target_back(tmp_path: Path) -> None:
    """Killed after the swap, then the work tree cannot be read (another git holds its
    index): the target goes back where the work tree is, and the integration fails."""
    root, _start, tip = _repository(tmp_path)
    _replayed_onto_new_main(root, tmp_path)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)
    _git(root, "update-ref", "refs/heads/main", rebased.head, rebased.onto)
    lock = root / ".git" / "index.lock"
    lock.touch()
    (failed,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert isinstance(failed, IntegrationFailed)
    assert "it is back where it was" in failed.reason
    assert _git(root, "rev-parse", "main") == rebased.onto
    assert _git(root, "rev-parse", "ralph/run-x") == tip
    lock.unlink()
    assert _git(root, "status", "--porcelain") == ""


def test_a_move_found_built_upon_after_a_kill_is_finished(tmp_path: Path) -> None:
    """Killed after the swap; before the redo someone committed on top of the new head: the
    move is recognised as made, and the run's branch follows."""
    root, start, tip = _repository(tmp_path)
    (rebased,) = _replayed(root, tmp_path, tip)
    assert isinstance(rebased, IntegrationRebased)
    other = _replayed_onto_new_main(root, tmp_path)[0]  # main: start -> other
    _git(root, "reset", "--quiet", "--hard", start)
    _git(root, "update-ref", "refs/heads/main", rebased.head, start)  # the killed move
    _git(root, "reset", "--quiet", "--hard", rebased.head)
    (root / "d.txt").write_text("d\n")
    _git(root, "add", "d.txt")
    _git(root, "commit", "--quiet", "-m", "built on it")
    later = _git(root, "rev-parse", "main")
    assert later != other
    (advanced,) = _move(root, tmp_path, rebased.onto, rebased.head, tip)
    assert advanced == TargetAdvanced(target="main", old=rebased.onto, new=rebased.head, at=AT)
    assert _git(root, "rev-parse", "main") == later
    assert _git(root, "rev-parse", "ralph/run-x") == rebased.head


def _commit(worktree: Path, name: str, message: str) -> str:
    (worktree / name).write_text(f"{name}\n")
    _git(worktree, "add", name)
    _git(worktree, "commit", "--quiet", "-m", message)
    return _git(worktree, "rev-parse", "HEAD")


def test_the_screen_passes_the_runs_commits_by_id_or_by_trailer_only(tmp_path: Path) -> None:
    """The run's commits pass by their ids, or by their trailers once rebased (a fork's by
    its source's), one commit per effect; a commit without one, one naming an effect the log
    does not record, a copy, and a head that is not the run's last are named."""
    root, start, tip = _repository(tmp_path)
    worktree = tmp_path / "run-x"
    made = RunCommits(run_id="x", commits=(("x:7", tip),))
    assert foreign_commits(root, start, tip, made) == ()
    # A fork's log holds the source's commit under its own run id; rebased, by the trailer.
    assert (
        foreign_commits(
            root, start, tip, RunCommits(run_id="y", commits=(("y:7", "0" * 40),), sources=("x",))
        )
        == ()
    )
    assert (
        foreign_commits(root, start, start, RunCommits(run_id="x", commits=())) == ()
    )  # nothing to land
    for message, why in (
        ("mine", "no Ralph-Effect trailer"),
        ("forged\n\nRalph-Effect: x:8", "Ralph-Effect x:8, which the run's log does not record"),
        ("copied\n\nRalph-Effect: x:7", "a second commit for Ralph-Effect x:7"),
        ("two\n\nRalph-Effect: x:7\nRalph-Effect: x:9", "2 Ralph-Effect trailers"),
    ):
        _git(worktree, "reset", "--quiet", "--hard", tip)
        added = _commit(worktree, "extra.txt", message)
        (found,) = foreign_commits(root, start, added, made)
        assert (found.sha, found.subject, found.why) == (added, message.split("\n")[0], why)
    # Both of the run's commits, rebased in the wrong order: the head is not its last.
    _git(worktree, "reset", "--quiet", "--hard", tip)
    second = _commit(worktree, "c.txt", "more\n\nRalph-Effect: x:8")
    both = RunCommits(run_id="x", commits=(("x:7", tip), ("x:8", second)))
    assert foreign_commits(root, start, second, both) == ()
    _git(worktree, "reset", "--quiet", "--hard", start)
    _git(worktree, "cherry-pick", second)
    _git(worktree, "cherry-pick", tip)
    head = _git(worktree, "rev-parse", "HEAD")
    (found,) = foreign_commits(root, start, head, both)
    assert (found.sha, found.why) == (head, "the branch's head, not the run's last commit")


def test_a_replay_of_a_branch_with_a_foreign_commit_moves_nothing(tmp_path: Path) -> None:
    """The screen refuses before the replay: no scratch worktree is made, nothing moves."""
    root, start, tip = _repository(tmp_path)
    added = _commit(tmp_path / "run-x", "backdoor.sh", "a helper")
    (failed,) = _replayed(root, tmp_path, tip)
    assert isinstance(failed, IntegrationFailed)
    assert f"{added[:12]} a helper (no Ralph-Effect trailer)" in failed.reason
    assert not (tmp_path / "scratch").exists()
    assert _git(root, "rev-parse", "main") == start
    assert _git(root, "rev-parse", "ralph/run-x") == added
