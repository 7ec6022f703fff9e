"""The merge queue's final gates pinned as a run's are (issue 46): real `ralph run --worktree`
runs with shell agents, a real pytest gate, real git, then `ralph worktrees merge`. While the
run worked, the person added a test on ``main`` that catches the agent's bug; the agent's
branch had gamed its test world so that such a test passes. The gate on the replayed branch
runs with ``main``'s tests and test configuration, so the gamed branch is refused (main
unchanged), a legitimate one lands, and a run made with ``--tests-editable`` lands with the
agent's test changes used, as the person asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.events import GatePin, IntegrationGated, PipelineEvent, RunStarted
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.test_pinned_gates import FIXED, GAMES, MAKEREPORT, buggy_project, write
from tests.runtime.workspace import (
    git,
    listed_worktrees,
    ralph,
)

pytestmark = pytest.mark.slow  # whole runs in subprocesses

WEAK_TESTS = "from calc import add\n\n\ndef test_add_zero():\n    assert add(0, 0) == 0\n"
"""The base's tests: a subtracting ``add()`` passes them, so the run's own gates pass."""

PERSONS_TEST = "\n\ndef test_add():\n    assert add(2, 3) == 5\n"
"""What the person appends to ``tests/test_calc.py`` on ``main`` while the run works."""

SCREEN_WARNS = '[tamper]\non_hit = "warn"\n'
"""The screen only warns here: pinning alone is what stands between the game and the merge."""

BRANCH_GAMES = {
    "add rebound in the test file": (
        GAMES["add rebound in the test file"][0],
        ("tests/test_calc.py",),
    ),
    "a conftest.py rewriting every report": (write("conftest.py", MAKEREPORT), ("conftest.py",)),
}


def _run_in_worktree(tmp_path: Path, body: str, *flags: str) -> tuple[Path, dict[str, str]]:
    """A buggy project whose agent runs ``body`` in a worktree of its own to completion;
    then the person's test committed on ``main``. The workspace and the worktree's listing."""
    root = buggy_project(
        tmp_path, body, extra=SCREEN_WARNS, files={"tests/test_calc.py": WEAK_TESTS}
    )
    ran = ralph("run", "--worktree", "--quiet", *flags, cwd=root, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    (worktree,) = listed_worktrees(root)
    with (root / "tests" / "test_calc.py").open("a") as tests:
        tests.write(PERSONS_TEST)
    git(root, "commit", "--quiet", "-am", "the person's test of add()")
    return root, worktree


def _log(worktree: dict[str, str]) -> list[PipelineEvent]:
    with SqliteEventStore(WorkspaceLayout(root=Path(worktree["path"])).store) as store:
        return list(store.read(worktree["run"]))


@pytest.mark.parametrize("game", list(BRANCH_GAMES))
def test_a_branch_that_gamed_its_tests_is_not_merged(tmp_path: Path, game: str) -> None:
    """The branch's gamed test world would pass the person's new test on the replayed head;
    pinned to main's head, the gate runs main's files instead, fails, and the queue refuses
    with a message naming the pinning and the files it did not take from the branch; main
    and the branch are unchanged."""
    body, restored = BRANCH_GAMES[game]
    root, worktree = _run_in_worktree(tmp_path, body)
    target = git(root, "rev-parse", "main")
    tip = git(root, "rev-parse", worktree["branch"])
    merged = ralph("worktrees", "merge", worktree["name"], cwd=root, timeout=300)
    assert merged.returncode == 1, merged.stdout + merged.stderr
    said = " ".join(merged.stderr.split())
    assert (
        f"Not merged: {worktree['branch']}: gate tests failed (exit 1) on the replayed head; "
        f"it ran pinned to main's {target[:12]}, with main's {', '.join(restored)}: the "
        "branch's changes to them were not used. Nothing moved."
    ) in said
    assert git(root, "rev-parse", "main") == target
    assert git(root, "rev-parse", worktree["branch"]) == tip
    assert git(root, "status", "--porcelain") == ""
    gated = [e for e in _log(worktree) if isinstance(e, IntegrationGated)]
    assert [(e.pinned, e.restored) for e in gated] == [(target, restored)]
    # The scratch's world was the person's: the branch and its worktree keep the agent's.
    assert (
        "lambda" in (Path(worktree["path"]) / "tests" / "test_calc.py").read_text()
        or (Path(worktree["path"]) / "conftest.py").is_file()
    )


def test_a_legitimate_branch_lands_and_says_its_gates_ran_pinned(tmp_path: Path) -> None:
    """The agent fixes add() and adds a test of its own: on the replayed head, main's tests
    (the person's new one among them) pass, then the agent's with them; the branch lands,
    and the merge's line and JSON say which commit the gates were pinned to."""
    new_test = "from calc import add\n\n\ndef test_add_negative():\n    assert add(-1, -2) == -3\n"
    body = write("calc.py", FIXED) + write("tests/test_negative.py", new_test)
    root, worktree = _run_in_worktree(tmp_path, body)
    target = git(root, "rev-parse", "main")
    merged = ralph("worktrees", "merge", worktree["name"], "--json", cwd=root, timeout=300)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    (row,) = [json.loads(line) for line in merged.stdout.splitlines()]
    assert (row["status"], row["pinned"], row["restored"]) == ("landed", target, [])
    assert git(root, "rev-parse", "main") == row["head"] != target
    assert "test_add():" in (root / "tests" / "test_calc.py").read_text()
    assert (root / "tests" / "test_negative.py").is_file()
    gated = [e for e in _log(worktree) if isinstance(e, IntegrationGated)]
    assert [(e.pinned, e.restored) for e in gated] == [(target, ())]


def test_a_run_made_with_tests_editable_lands_with_the_agents_test_changes(
    tmp_path: Path,
) -> None:
    """The same gamed branch from a run the person made with ``--tests-editable``: the merge
    queue keeps the run's recorded opt-out, runs the gate on the replayed head as it is
    (the agent's rebinding included), and lands it, saying nothing of pinning."""
    body = BRANCH_GAMES["add rebound in the test file"][0]
    root, worktree = _run_in_worktree(tmp_path, body, "--tests-editable")
    (start,) = [e for e in _log(worktree) if isinstance(e, RunStarted)]
    assert start.loop.pin is GatePin.OFF
    merged = ralph("worktrees", "merge", worktree["name"], cwd=root, timeout=300)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    assert f"Landed {worktree['branch']} on main" in merged.stderr
    assert "pinned" not in merged.stderr
    gated = [e for e in _log(worktree) if isinstance(e, IntegrationGated)]
    assert [(e.pinned, e.restored) for e in gated] == [(None, ())]
    assert "lambda" in (root / "tests" / "test_calc.py").read_text()
