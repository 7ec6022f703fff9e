"""``ralph status`` answered from the store's ``run_status`` projection (the lean path,
``pipeline.app.cli._status_quick``) prints what the full command prints from the folded
log, for the runs it answers and for those it leaves to the full command."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from pipeline.events import (
    CommitCreated,
    Count,
    PipelineEvent,
    RunStarted,
    ScreenHit,
    ScreenKind,
)
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.cli.test_cli import ralph
from tests.cli.test_quick_commands import _loaded, _probed
from tests.cli.test_sandbox_shown import _refused, _sandboxed
from tests.cli.test_screens_shown import _screened
from tests.views.test_sandbox import _inserted

_HEAVY = {"typer", "pipeline.events", "cattrs", "attrs"}
"""What the lean path does without: its answer shows none of them was loaded (attrs too:
the records it meets on the way to the store and to git are dataclasses)."""


def _both(root: Path, *argv: str) -> tuple[bool, subprocess.CompletedProcess[str]]:
    """Whether ``ralph status ARGV`` in ``root`` was answered lean, having checked that it
    printed what the full command (``--workspace .``, which the lean path leaves alone)
    prints on both streams; and the full command's run."""
    plain, modules = _probed(root, "status", *argv)
    full = ralph("status", "--workspace", ".", *argv, cwd=root)
    assert plain.returncode == full.returncode, (plain.stderr, full.stderr)
    assert (plain.stdout, plain.stderr) == (full.stdout, full.stderr)
    return not _HEAVY & modules, full


def _hand_run(root: Path, log: Sequence[PipelineEvent]) -> str:
    """``log`` as one run of the default store of a workspace at ``root``; no git, so its
    commits are left out (the full command cannot check them: neither can the lean path)."""
    root.mkdir()
    log = [event for event in log if not isinstance(event, CommitCreated)]
    start = log[0]
    assert isinstance(start, RunStarted)
    path = WorkspaceLayout(root=root).store
    path.parent.mkdir(parents=True, exist_ok=True)
    with SqliteEventStore(path) as store:
        store.append(start.run_id, 0, log)
    return start.run_id


def test_the_demo_run_is_answered_lean_as_the_full_command_answers(
    demo_dir: Path,
) -> None:
    """The demo's run (its sandbox on, its commits on HEAD) is answered from the projection,
    latest or named, with what the folded log gives."""
    lean, shown = _both(demo_dir)
    assert lean
    assert "│ sandbox " in shown.stdout
    assert "│ commits                     │ 3 " in shown.stdout
    run_id = (
        sqlite3.connect(demo_dir / ".git" / "ralph" / "pipeline.db")
        .execute("SELECT run_id FROM runs")
        .fetchone()[0]
    )
    assert _both(demo_dir, "--run", run_id)[0]


def test_a_commit_git_lost_is_left_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """With the run's last commit gone from HEAD, the full command answers: it counts the
    commits git still has and says which it lost (the projection alone would say 3)."""
    root = tmp_path / "run"
    shutil.copytree(demo_dir, root, symlinks=True)
    subprocess.run(["git", "reset", "-q", "--hard", "HEAD~1"], cwd=root, check=True)
    lean, shown = _both(root)
    assert not lean
    assert "│ commits                     │ 2 " in shown.stdout


def test_a_damaged_log_is_left_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """An event's stored bytes edited behind the store's back break the log's hash chain:
    the full command answers, and says the store is damaged (the projection alone would show
    the run as it was)."""
    root = tmp_path / "run"
    shutil.copytree(demo_dir, root, symlinks=True)
    with sqlite3.connect(root / ".git" / "ralph" / "pipeline.db") as db:
        db.execute("UPDATE events SET body = replace(body, 'plan', 'PLAN') WHERE sequence = 3")
    lean, shown = _both(root)
    assert not lean
    assert "damaged" in shown.stderr


def test_a_store_without_the_status_is_left_to_the_full_command(
    demo_dir: Path,
    tmp_path: Path,
) -> None:
    """A run begun before the projection (its ``begun`` part missing) or whose status is
    behind its head is shown by folding its log, the same."""
    for lost in ("part = 'begun'", "part = 'state'"):
        root = tmp_path / lost.split("'")[1]
        shutil.copytree(demo_dir, root, symlinks=True)
        with sqlite3.connect(root / ".git" / "ralph" / "pipeline.db") as db:
            db.execute(f"DELETE FROM run_status WHERE {lost}")
        assert not _both(root)[0]


def test_refused_connections_and_screens_are_left_to_the_full_command(tmp_path: Path) -> None:
    """A run whose sandbox refused connections, or that screened its changes, is shown by
    the full command (the rows read from the log); one with its sandbox checked only is
    answered lean, its sandbox rows where the full command puts them."""
    checked = _hand_run(tmp_path / "checked", _sandboxed())
    lean, shown = _both(tmp_path / "checked")
    assert lean
    assert checked in shown.stdout
    assert "│ refused connections         │ -" in shown.stdout
    _hand_run(tmp_path / "refused", _sandboxed(_refused("example.org:443", 2)))
    lean, shown = _both(tmp_path / "refused")
    assert not lean
    assert "example.org:443 (2 times)" in shown.stdout
    hit = ScreenHit(kind=ScreenKind.TODO_ADDED, path="a.py", line=Count(1), detail="# TODO")
    _hand_run(tmp_path / "screened", _inserted(_sandboxed(), {1: [_screened(hit)]}))
    assert not _both(tmp_path / "screened")[0]


@pytest.mark.parametrize("argv", [["--json"], ["--run"], ["-C", "."], ["--run", "nope"]])
def test_other_shapes_are_left_to_the_full_command(
    demo_dir: Path,
    argv: list[str],
) -> None:
    """Anything but ``status`` and ``status --run RUN`` of a run the store holds loads the
    full command (which prints the JSON, or says what is wrong)."""
    _said, modules = _loaded(demo_dir, "status", *argv)
    assert "typer" in modules
