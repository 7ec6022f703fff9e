"""The collection check on real repositories with a real pytest: a base test renamed out of
what pytest collects, or skipped by a module-level ``pytestmark``, is lost; one moved to
another collected file is not; a tree whose collection errors is a collection failure, never
"every test lost"; a gate's own ``collect`` command is read one id a line; the base is
checked out in a scratch worktree that is gone afterwards, and collected once per base."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.app.workspace import open_workspace
from pipeline.core.config import parse_config
from pipeline.core.effects import EffectId, ScreenChanges
from pipeline.events import ChangesScreened, Count, Digest, GateSpec, ScreenKind, ScreenScope
from pipeline.handlers.runtime import (
    Collector,
    GitPolicy,
    Runtime,
    WorkspaceLayout,
    choose_sandbox,
    collect_folder,
)
from pipeline.handlers.sandbox import Sandbox
from tests.runtime.workspace import commit_all, make_workspace

pytestmark = pytest.mark.slow  # a real pytest collects twice a test: seconds each

CALC = "def add(a, b):\n    return a - b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    assert add(0, 0) == 0\n"
)
T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
OTHER = "def test_truth():\n    assert 1 + 1 == 2\n"
GATE = GateSpec(
    name="tests",
    argv=(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"),
    timeout_s=Count(60),
)
ENV = {"tests": {"PYTHONPATH": ".", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}}


def _repository(tmp_path: Path) -> tuple[Path, str]:
    """A repository whose base commit has calc.py and two test files; its base's id."""
    root = tmp_path / "ws"
    root.mkdir()
    make_workspace(root, scripts={}, agents={"main": ["true"]})
    (root / "tests").mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(TESTS)
    (root / "tests" / "test_other.py").write_text(OTHER)
    commit_all(root, "calc and its tests")
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()
    return root, base


def _collector(root: Path, commands: dict[str, tuple[str, ...]] | None = None) -> Collector:
    return Collector(
        layout=WorkspaceLayout(root=root),
        run_id="run-1",
        gate_env=ENV,
        commands=commands or {},
        grace_s=1.0,
        policy=GitPolicy(),
    )


def test_a_test_file_renamed_to_a_name_pytest_does_not_collect_loses_its_tests(
    tmp_path: Path,
) -> None:
    """``tests/calc_checks.py`` is still a test path, but pytest never collects it: both of
    its tests are lost, named with the file they were in."""
    root, base = _repository(tmp_path)
    (root / "tests" / "test_calc.py").rename(root / "tests" / "calc_checks.py")
    hits = _collector(root).hits(base, (GATE,))
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.TEST_LOST, "tests/test_calc.py")]
    assert hits[0].detail == (
        "gate 'tests': 2 tests no longer collected: "
        "tests/test_calc.py::test_add, tests/test_calc.py::test_add_zero"
    )
    assert not collect_folder(root, "run-1").exists()


def test_a_module_level_skip_marker_loses_the_module_s_tests(tmp_path: Path) -> None:
    """``pytestmark = pytest.mark.skip`` keeps every test collected, and none runs."""
    root, base = _repository(tmp_path)
    marked = "import pytest\n\npytestmark = pytest.mark.skip(reason='later')\n" + TESTS
    (root / "tests" / "test_calc.py").write_text(marked)
    hits = _collector(root).hits(base, (GATE,))
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.TEST_LOST, "tests/test_calc.py")]
    assert "2 tests collected but marked skip" in hits[0].detail


def test_an_xfail_or_a_true_skipif_is_lost_and_a_false_skipif_is_not(tmp_path: Path) -> None:
    """pytest's own evaluation of conditions decides: ``skipif(True)`` and ``xfail`` keep a
    test from counting, ``skipif(False)`` does not."""
    root, base = _repository(tmp_path)
    text = TESTS.replace("def test_add():", "@pytest.mark.xfail\ndef test_add():").replace(
        "def test_add_zero():",
        "@pytest.mark.skipif('1 == 2', reason='never')\ndef test_add_zero():",
    )
    (root / "tests" / "test_calc.py").write_text("import pytest\n" + text)
    (root / "tests" / "test_other.py").write_text(
        "import pytest\n\n\n@pytest.mark.skipif(True, reason='x')\n" + OTHER
    )
    hits = _collector(root).hits(base, (GATE,))
    assert [(h.path, h.detail) for h in hits] == [
        (
            "tests/test_calc.py",
            "gate 'tests': 1 test collected but marked xfail: tests/test_calc.py::test_add",
        ),
        (
            "tests/test_other.py",
            "gate 'tests': 1 test collected but marked skip: tests/test_other.py::test_truth",
        ),
    ]


def test_tests_moved_to_another_collected_file_are_not_lost(tmp_path: Path) -> None:
    """Splitting ``test_calc.py`` into two collected files keeps every test."""
    root, base = _repository(tmp_path)
    (root / "tests" / "test_calc.py").unlink()
    first, second = TESTS.split("\n\n\ndef test_add_zero")
    (root / "tests" / "test_add.py").write_text(first + "\n")
    (root / "tests" / "test_zero.py").write_text(
        "from calc import add\n\n\ndef test_add_zero" + second
    )
    assert _collector(root).hits(base, (GATE,)) == ()


def test_a_collection_error_on_the_tree_is_a_collection_failure(tmp_path: Path) -> None:
    """A test module that fails to import makes pytest stop collecting: one
    ``collection_failed`` hit naming how it ended, not every test lost."""
    root, base = _repository(tmp_path)
    (root / "tests" / "test_calc.py").write_text("import nothing_of_the_kind\n" + TESTS)
    hits = _collector(root).hits(base, (GATE,))
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.COLLECTION_FAILED, ".")]
    assert hits[0].detail.startswith("gate 'tests': collecting the tests failed (exit 2: ")


def test_a_base_collected_once_per_run_and_checked_out_apart(tmp_path: Path) -> None:
    """The base's collection is kept for the run: its log is written once, and the scratch
    worktree is removed after it, leaving ``git worktree list`` as it was."""
    root, base = _repository(tmp_path)
    collector = _collector(root)
    assert collector.hits(base, (GATE,)) == ()
    log = WorkspaceLayout(root=root).agent_log("run-1", "collect-tests-base")
    written = log.stat().st_mtime_ns
    log.write_text("")  # a second base collection would write it again
    assert collector.hits(base, (GATE,)) == ()
    assert log.read_text() == ""
    listed = subprocess.run(
        ["git", "worktree", "list"], cwd=root, check=True, capture_output=True, text=True
    ).stdout
    assert len(listed.splitlines()) == 1
    assert written > 0


def test_a_runtime_collects_its_base_once_across_its_screens(tmp_path: Path) -> None:
    """A ``Runtime`` whose pytest gate is screened twice on one base collects the base once:
    its screen, and the collector with it, is made once per run."""
    root, _ = _repository(tmp_path)
    argv = ", ".join(f'"{a}"' for a in GATE.argv)
    env = 'env = { PYTHONPATH = ".", PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }'
    with (root / "ralph.toml").open("a") as config:
        config.write(f'\n[[gates]]\nname = "tests"\nargv = [{argv}]\ntimeout_s = 60\n{env}\n')
    commit_all(root, "the gate")
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()
    (root / "tests" / "test_calc.py").rename(root / "tests" / "calc_checks.py")
    workspace = open_workspace(root)
    loop = workspace.config.loop_policy()
    runtime = Runtime(
        layout=workspace.layout,
        config=workspace.config,
        config_digest=Digest("0"),
        clock=lambda: T,
        run_id="run-1",
        grace_s=1.0,
    )
    effect = ScreenChanges(
        effect_id=EffectId("run-1:1"),
        scope=ScreenScope.ITERATION,
        base=base,
        tamper=loop.tamper,
        postconditions=None,
        gates=loop.gates,
    )
    log = workspace.layout.agent_log("run-1", "collect-tests-base")
    first = runtime(effect)
    log.write_text("")  # a second base collection would write it again
    second = runtime(effect)
    assert log.read_text() == ""
    for screened in (*first, *second):
        assert isinstance(screened, ChangesScreened), screened
        assert ScreenKind.TEST_LOST in {h.kind for h in screened.hits}


def test_a_gate_s_collect_command_is_read_one_id_a_line(tmp_path: Path) -> None:
    """A gate pytest does not run names its own ``collect`` command: each line of its output
    is a test; an id the base printed and the tree does not is lost."""
    root, base = _repository(tmp_path)
    (root / "ids.txt").write_text("calc::adds\ncalc::adds_zero\n")
    commit_all(root, "the ids")
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()
    (root / "ids.txt").write_text("calc::adds\n")
    make = GateSpec(name="make", argv=("make", "test"), timeout_s=Count(60))
    collector = _collector(root, {"make": ("cat", "ids.txt")})
    hits = collector.hits(base, (make,))
    assert [(h.kind, h.path, h.detail) for h in hits] == [
        (ScreenKind.TEST_LOST, "calc", "gate 'make': 1 test no longer collected: calc::adds_zero")
    ]


def test_a_gate_that_is_no_known_runner_collects_nothing(tmp_path: Path) -> None:
    """A gate that runs a shell command line, with no ``collect``, is not collected."""
    root, base = _repository(tmp_path)
    (root / "tests" / "test_calc.py").unlink()
    shell = GateSpec(name="sh", argv=("sh", "-c", "pytest -q"), timeout_s=Count(60))
    assert _collector(root).hits(base, (shell,)) == ()


def test_a_collection_that_outlasts_the_gate_s_timeout_is_a_collection_failure(
    tmp_path: Path,
) -> None:
    """A conftest that sleeps makes collection run past the gate's ``timeout_s``: it is
    stopped, and said as a failure, not as every test lost."""
    root, base = _repository(tmp_path)
    (root / "tests" / "conftest.py").write_text("import time\n\ntime.sleep(60)\n")
    quick = GateSpec(name="tests", argv=GATE.argv, timeout_s=Count(2))
    started = time.monotonic()
    hits = _collector(root).hits(base, (quick,))
    assert time.monotonic() - started < 30
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.COLLECTION_FAILED, ".")]
    assert "timed out (total)" in hits[0].detail


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
def test_both_collections_run_in_the_run_s_sandbox(tmp_path: Path) -> None:
    """With ``[sandbox] mode = "required"`` the tree's collection runs in the run's sandbox
    and the base's in one made for the scratch worktree (its ralph folder made for the
    sandbox to bind): the renamed file's tests are still found lost."""
    root, base = _repository(tmp_path)
    text = (root / "ralph.toml").read_text().replace('mode = "off"', 'mode = "required"')
    config = parse_config(text, "ralph.toml")
    choice = choose_sandbox(config, workspace=root)
    layout = WorkspaceLayout(root=root)
    sandbox = choice.sandbox(layout, config, "run-1", ())
    assert sandbox is not None
    (root / "tests" / "test_calc.py").rename(root / "tests" / "calc_checks.py")

    def in_scratch(scratch: Path) -> Sandbox | None:
        return choice.sandbox(WorkspaceLayout(root=scratch), config, None, ())

    collector = Collector(
        layout=layout,
        run_id="run-1",
        gate_env=ENV,
        commands={},
        grace_s=1.0,
        policy=GitPolicy(),
        sandbox=lambda: sandbox,
        scratch_sandbox=in_scratch,
    )
    hits = collector.hits(base, (GATE,))
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.TEST_LOST, "tests/test_calc.py")]
