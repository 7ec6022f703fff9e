"""The tamper screen end to end: real `ralph` processes, a real pytest gate, real git, and
shell agents that cheat on purpose. Deleting the failing test makes pytest pass, yet the run
is sent back, told precisely, and completes only once the test is back and the code fixed; a
skip marker never gets a run to complete; a renamed test file keeping its tests is no hit; a
secret written into the work tree is named, never quoted, in the log; an edited ralph.toml is
caught, an untracked one left alone is not."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.events import (
    ChangesScreened,
    GateFinished,
    GateStatus,
    RunCompleted,
    ScreenBaseRecorded,
    ScreenKind,
    ScreenScope,
    TerminationReason,
)
from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import COUNT_CALLS, SHELL_REPORTS, make_workspace, ralph, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

CALC = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a * b\n"
FIXED = "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    return a / b\n"
TESTS = (
    "from calc import add, div\n\n\n"
    "def test_add():\n    assert add(1, 2) == 3\n\n\n"
    "def test_div():\n    assert div(6, 3) == 2\n"
)
OTHER = "def test_truth():\n    assert 1 + 1 == 2\n"
GATE = f"""
[[gates]]
name = "tests"
argv = ["{sys.executable}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
timeout_s = 120
env = {{ PYTHONDONTWRITEBYTECODE = "1", PYTHONPATH = ".", PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }}
"""


def cheating_workspace(tmp_path: Path, body: str, extra: str = GATE, iterations: int = 3) -> Path:
    """A repository with a bug (``div`` multiplies), a failing test for it and a passing one,
    a pytest gate, and a shell agent running ``body`` on every call (its prompt is in
    ``.ralph/prompt-$n.md``)."""
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    script = tmp_path / "agent.sh"  # outside the repository: not a change to commit
    script.write_text("#!/bin/sh\nset -e\n" + COUNT_CALLS + body + SHELL_REPORTS)
    script.chmod(0o755)
    budgets = (
        f"max_iterations = {iterations}\nmax_review_passes = 0\nmax_retries_per_agent = 1\n"
        "backoff_base_ms = 10\nbackoff_cap_ms = 20"
    )
    make_workspace(root, scripts={}, agents={"main": [str(script)]}, budgets=budgets, extra=extra)
    (root / "tests").mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "tests" / "test_other.py").write_text(OTHER)
    subprocess.run(["git", "add", "calc.py", "tests"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "calc and its tests"], cwd=root, check=True)
    return root


def screens(root: Path) -> list[ChangesScreened]:
    return [e for e in stored_events(root) if isinstance(e, ChangesScreened)]


def ended(root: Path) -> TerminationReason:
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    return completed.reason


def test_deleting_the_failing_test_is_caught_and_the_run_completes_once_it_is_put_back(
    tmp_path: Path,
) -> None:
    """The agent deletes tests/test_calc.py: pytest passes (the other test), but the screen
    blocks with the file and its tests named; told so, the agent puts the test back and fixes
    div, and the run completes with a clean screen and a passing gate."""
    body = (
        'if grep -q "test_file_deleted" ".ralph/prompt-$n.md"; then\n'
        f"  cp {tmp_path / 'test_calc.py'} tests/test_calc.py\n"
        f"  printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
        "  touch .ralph/put-back\n"
        "elif [ ! -e .ralph/put-back ]; then\n"
        "  rm -f tests/test_calc.py\n"
        "fi\n"
    )
    (tmp_path / "test_calc.py").write_text(TESTS)  # outside the repository
    root = cheating_workspace(tmp_path, body)
    result = ralph("run", cwd=root, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    found = screens(root)
    # The task's screen blocks before the deletion is committed (the file's tests gone by
    # the text and by pytest's collection); the next task's and the run's are clean.
    assert [(s.scope, tuple(h.kind for h in s.hits)) for s in found] == [
        (ScreenScope.ITERATION, (ScreenKind.TEST_FILE_DELETED, ScreenKind.TEST_LOST)),
        (ScreenScope.ITERATION, ()),
        (ScreenScope.RUN, ()),
    ]
    hit, lost = found[0].hits
    assert lost.detail == (
        "gate 'tests': 2 tests no longer collected: "
        "tests/test_calc.py::test_add, tests/test_calc.py::test_div"
    )
    assert hit.path == "tests/test_calc.py"
    assert "test_add" in hit.detail
    assert "test_div" in hit.detail
    gates = [e.status for e in stored_events(root) if isinstance(e, GateFinished)]
    assert gates == [GateStatus.PASSED]  # the final gate: pytest alone would have been fooled
    assert ended(root) is TerminationReason.COMPLETED
    assert (root / "tests" / "test_calc.py").read_text() == TESTS


def test_a_skip_marker_added_never_lets_the_run_complete(tmp_path: Path) -> None:
    body = (
        "if ! grep -q 'mark.skip' tests/test_calc.py; then\n"
        "  sed -i 's/^def test_div/@pytest.mark.skip(reason=\"flaky\")\\ndef test_div/' "
        "tests/test_calc.py\n"
        "  sed -i '1i import pytest' tests/test_calc.py\n"
        "fi\n"
    )
    root = cheating_workspace(tmp_path, body, iterations=2)
    result = ralph("run", cwd=root, timeout=240)
    assert result.returncode != 0, result.stdout + result.stderr
    assert ended(root) is TerminationReason.MAX_ITERATIONS
    found = screens(root)
    assert found
    for screened in found:
        # Skipped as the text shows, and as pytest's collection marks it.
        hit, lost = screened.hits
        assert hit.kind is ScreenKind.SKIP_ADDED
        assert lost.kind is ScreenKind.TEST_LOST
        assert "1 test collected but marked skip: tests/test_calc.py::test_div" in lost.detail
        assert hit.path == "tests/test_calc.py"
        assert hit.line == 9
        assert "pytest.mark.skip" in hit.detail
    status = ralph("status", cwd=root)
    assert "skip_added" in status.stdout


def test_a_renamed_test_file_keeping_its_tests_is_no_hit(tmp_path: Path) -> None:
    body = (
        "if [ -e tests/test_calc.py ]; then git mv tests/test_calc.py tests/test_division.py; fi\n"
        f"printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
    )
    root = cheating_workspace(tmp_path, body)
    result = ralph("run", cwd=root, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s.hits for s in screens(root)] == [(), ()]
    assert ended(root) is TerminationReason.COMPLETED


def test_a_secret_written_into_the_work_tree_is_named_and_never_stored(tmp_path: Path) -> None:
    key = "AKIA" + "Z7QW4LMNX2PD5RTY"
    body = f"printf 'AWS_KEY = \"{key}\"\\n' > settings.py\n" + (
        f"printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
    )
    root = cheating_workspace(tmp_path, body, iterations=1)
    ralph("run", cwd=root, timeout=240)
    # A task's screen looks for tampering only; the run's holds the postconditions.
    found = [s for s in screens(root) if s.scope is ScreenScope.RUN]
    assert found
    hits = [h for h in found[0].hits if h.kind is ScreenKind.SECRET_ADDED]
    assert [(h.path, h.line) for h in hits] == [("settings.py", 1)]
    assert key not in hits[0].detail
    with sqlite3.connect(WorkspaceLayout(root=root).store) as db:
        bodies = b"".join(bytes(row[0]) for row in db.execute("SELECT body FROM events"))
    assert key.encode() not in bodies
    assert ended(root) is not TerminationReason.COMPLETED


def test_an_edited_ralph_toml_is_caught(tmp_path: Path) -> None:
    body = (
        "printf '\\n# the agent was here\\n' >> ralph.toml\n"
        f"printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
    )
    root = cheating_workspace(tmp_path, body, iterations=1)
    ralph("run", cwd=root, timeout=240)
    (screened,) = screens(root)
    kinds = {(h.kind, h.path) for h in screened.hits}
    assert (ScreenKind.PROTECTED_CHANGED, "ralph.toml") in kinds


def test_an_untracked_ralph_toml_left_alone_is_no_hit(tmp_path: Path) -> None:
    """As `ralph init` leaves it: ralph.toml and PROMPT.md untracked. The run keeps their text
    at its start, so they read as unchanged, not as files the agent added."""
    body = f"printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
    root = cheating_workspace(tmp_path, body)
    subprocess.run(["git", "rm", "--cached", "--quiet", "ralph.toml", "PROMPT.md"], cwd=root)
    subprocess.run(["git", "commit", "--quiet", "-m", "untrack"], cwd=root, check=True)
    (root / "PROMPT.md").write_text("Make the tests pass. TODO: everything\n")
    result = ralph("run", cwd=root, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s.hits for s in screens(root)] == [(), ()]
    bases = [e for e in stored_events(root) if isinstance(e, ScreenBaseRecorded)]
    head = subprocess.run(
        ["git", "rev-list", "--max-parents=0", "HEAD"], cwd=root, capture_output=True, text=True
    )
    assert len(bases) == 1
    assert bases[0].sha is not None
    assert bases[0].sha != head.stdout.strip()  # the tip when the run started, not the root


def test_a_gate_script_the_agent_edits_is_caught(tmp_path: Path) -> None:
    """The gate runs scripts/check.sh; the agent makes it exit 0 whatever: the screen names
    the script as a file the gate runs."""
    gate = '[[gates]]\nname = "check"\nargv = ["sh", "scripts/check.sh"]\n'
    body = "printf 'exit 0\\n' > scripts/check.sh\n"
    root = cheating_workspace(tmp_path, body, extra=gate, iterations=1)
    (root / "scripts").mkdir()
    (root / "scripts" / "check.sh").write_text("python -m pytest -q tests\n")
    subprocess.run(["git", "add", "scripts"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "the check"], cwd=root, check=True)
    ralph("run", cwd=root, timeout=240)
    (screened,) = screens(root)
    details = {(h.kind, h.path, h.detail) for h in screened.hits}
    assert (
        ScreenKind.PROTECTED_CHANGED,
        "scripts/check.sh",
        "modified (gate 'check' runs it)",
    ) in (details)


def test_a_hit_in_a_file_whose_name_is_not_utf8_is_recorded_not_a_crash(tmp_path: Path) -> None:
    """git lists the name as bytes; the fact names it with U+FFFD for the odd byte, and the
    run goes on to its end."""
    body = (
        "printf 'import pytest\\n\\n\\n@pytest.mark.skip\\ndef test_x():\\n    assert 1\\n' "
        "> \"tests/test_$(printf '\\351').py\"\n"
    )
    root = cheating_workspace(tmp_path, body, iterations=1)
    result = ralph("run", cwd=root, timeout=240)
    assert "Traceback" not in result.stderr, result.stderr
    (screened,) = screens(root)
    # The skip, and `assert 1`, a tautology, both in the file with the odd name.
    assert {(h.kind, h.path) for h in screened.hits} == {
        (ScreenKind.SKIP_ADDED, "tests/test_\ufffd.py"),
        (ScreenKind.TAUTOLOGY_ADDED, "tests/test_\ufffd.py"),
    }
    assert ended(root) is TerminationReason.MAX_ITERATIONS


def test_the_persons_files_kept_by_allow_dirty_are_never_screened(tmp_path: Path) -> None:
    """With --allow-dirty the person's own untracked file (a TODO in it, a secret-free note)
    and edit are left out of the screen as they are out of the commits: the agent's real fix
    screens clean and the run completes."""
    body = f"printf '{FIXED.encode('unicode_escape').decode()}' > calc.py\n"
    root = cheating_workspace(tmp_path, body)
    (root / "notes.txt").write_text("TODO: ask about the release\n")
    (root / "tests" / "test_other.py").write_text(OTHER + "# TODO: more truths\n")
    result = ralph("run", "--allow-dirty", cwd=root, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [s.hits for s in screens(root)] == [(), ()]
    assert ended(root) is TerminationReason.COMPLETED
