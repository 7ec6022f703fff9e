"""Pinned gates end to end (issue 46): real `ralph` runs, real pytest, make and npm gates, real
git, and shell agents that never fix the bug but game the check one way each. The gate runs
in a scratch worktree holding the agent's code with the person's tests and test
configuration from the run's base, so none of them gets a run to complete while ``add()``
subtracts; a legitimate fix completes in one iteration, and ``--tests-editable`` lets a
legitimate change of an expected value through."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.events import (
    CommitCreated,
    DevelopmentIterationStarted,
    GateFinished,
    GatePin,
    GateStatus,
    HookRan,
    RunCompleted,
    RunStarted,
    TerminationReason,
)
from tests.runtime.workspace import COUNT_CALLS, SHELL_REPORTS, make_workspace, ralph, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

CALC = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
GATE_ENV = (
    '{ PYTHONDONTWRITEBYTECODE = "1", PYTHONPATH = ".", PYTEST_DISABLE_PLUGIN_AUTOLOAD = "1" }'
)
"""The gates' variables: no plugin of this environment loads (pytest starts quicker); a plugin
an agent names with ``-p`` still does."""

TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_add_zero():\n    assert add(0, 4) == 4\n"
)
PYTEST = (
    '[[gates]]\nname = "tests"\n'
    f'argv = ["{sys.executable}", "-m", "pytest", "-q", "-p", "no:cacheprovider"]\n'
    'on = ["iteration", "final"]\ntimeout_s = 120\n'
    f"env = {GATE_ENV}\n"
)
MAKEFILE = f"test:\n\t{sys.executable} -m pytest -q -p no:cacheprovider\n"
MAKE = '[[gates]]\nname = "tests"\nargv = ["make", "test"]\non = ["iteration", "final"]\n'
MAKE += f"env = {GATE_ENV}\n"
NPM = '[[gates]]\nname = "tests"\nargv = ["npm", "test", "--silent"]\non = ["iteration", "final"]\n'
PACKAGE = json.dumps(
    {"name": "calc", "version": "1.0.0", "scripts": {"test": "node test/calc.test.js"}}
)
NODE_TEST = (
    "const assert = require('assert');\nconst { add } = require('../calc.js');\n"
    "assert.strictEqual(add(2, 3), 5);\nassert.strictEqual(add(0, 4), 4);\n"
)
NO_SECRETS = (
    "if grep -rqs --exclude-dir=.git 'KEY-[0-9]\\{6\\}' .; then\n"
    "  echo 'a key is in the tree'; exit 1\nfi\n"
)
HOOK = (
    '[[hooks]]\nname = "no-secrets"\npoint = "before_commit"\n'
    'command = ["sh", "ci-hooks/no-secrets.sh"]\non_error = "block"\n'
)


def _sh(text: str) -> str:
    """``text`` as a shell ``printf`` format."""
    return text.encode("unicode_escape").decode().replace("'", "'\\''").replace("%", "%%")


def write(path: str, text: str) -> str:
    """A shell line writing ``text`` to ``path`` (its folder made)."""
    return f"mkdir -p \"$(dirname '{path}')\"\nprintf '{_sh(text)}' > '{path}'\n"


def buggy_project(
    tmp_path: Path,
    body: str,
    *,
    gate: str = PYTEST,
    extra: str = "",
    files: dict[str, str] | None = None,
    iterations: int = 2,
) -> Path:
    """A repository whose ``add()`` subtracts, two pytest tests that catch it, ``gate`` run
    at every task and at the end, ``files`` beside them (all committed: the run's base), and
    a shell agent running ``body`` on every call, then reporting success."""
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    script = tmp_path / "agent.sh"  # outside the repository: not a change to commit
    script.write_text("#!/bin/sh\nset -e\n" + COUNT_CALLS + body + SHELL_REPORTS)
    script.chmod(0o755)
    budgets = (
        f"max_iterations = {iterations}\nmax_review_passes = 0\nmax_retries_per_agent = 1\n"
        "backoff_base_ms = 10\nbackoff_cap_ms = 20"
    )
    make_workspace(
        root, scripts={}, agents={"main": [str(script)]}, budgets=budgets, extra=gate + extra
    )
    for name, text in {"calc.py": CALC, "tests/test_calc.py": TESTS, **(files or {})}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "add", "--all", "--", ":!.ralph"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "calc and its tests"], cwd=root, check=True)
    return root


def ended(root: Path) -> TerminationReason:
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    assert completed.reason is not None
    return completed.reason


PLUGIN = "import atexit, os\natexit.register(os._exit, 0)\n"
MAKEREPORT = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
    "def pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n"
)
STAND_IN = (
    "import importlib.util, os, sys, sysconfig\n"
    "if '--collect-only' not in sys.argv:\n    os._exit(0)\n"
    "path = os.path.join(sysconfig.get_paths()['stdlib'], 'inspect.py')\n"
    "spec = importlib.util.spec_from_file_location('inspect', path)\n"
    "module = importlib.util.module_from_spec(spec)\n"
    "sys.modules['inspect'] = module\n"
    "spec.loader.exec_module(module)\n"
)
"""An ``inspect.py`` the runner imports before any test, first on ``python -m``'s path:
while collecting it is the real one; otherwise it ends the run with status 0."""
ANOTHER_TEST = "from calc import add\n\n\ndef test_add_is_callable():\n    assert callable(add)\n"

GAMES = {
    "pytest.ini loads a plugin that forces exit 0": (
        write("support/plug.py", PLUGIN)
        + write("pytest.ini", "[pytest]\naddopts = -p support.plug\n"),
        PYTEST,
        {},
    ),
    "tox.ini collects another file only": (
        write("tests/test_misc.py", ANOTHER_TEST)
        + write("tox.ini", "[tox]\nenvlist = py\n\n[pytest]\npython_files = test_misc.py\n"),
        PYTEST,
        {},
    ),
    "the test file renamed out of pytest's sight": (
        "if [ -e tests/test_calc.py ]; then git mv tests/test_calc.py tests/calc_checks.py; fi\n"
        + write("tests/test_misc.py", ANOTHER_TEST),
        PYTEST,
        {},
    ),
    "assert True or ...": (
        "sed -i 's/assert add/assert True or add/' tests/test_calc.py\n",
        PYTEST,
        {},
    ),
    "add rebound in the test file": (
        "grep -q lambda tests/test_calc.py || "
        "sed -i 's/^from calc import add$/&\\nadd = lambda a, b: a + b/' tests/test_calc.py\n",
        PYTEST,
        {},
    ),
    "tests/__init__.py patches calc.add": (
        write("tests/__init__.py", "import calc\n\ncalc.add = lambda a, b: a + b\n"),
        PYTEST,
        {},
    ),
    "the expected values changed": (
        "sed -i 's/== 5/== -1/; s/== 4$/== -4/' tests/test_calc.py\n",
        PYTEST,
        {},
    ),
    "the Makefile's target rewritten": (
        write("Makefile", "test:\n\t@echo all good\n"),
        MAKE,
        {"Makefile": MAKEFILE},
    ),
    "package.json's scripts.test rewritten": (
        "sed -i 's#node test/calc.test.js#exit 0#' package.json\n",
        NPM,
        {
            "package.json": PACKAGE,
            "calc.js": "exports.add = (a, b) => a - b;\n",
            "test/calc.test.js": NODE_TEST,
        },
    ),
    "a conftest.py rewriting every report": (write("conftest.py", MAKEREPORT), PYTEST, {}),
    "a top-level module standing in for one of the standard library's": (
        write("inspect.py", STAND_IN),
        PYTEST,
        {},
    ),
}


@pytest.mark.parametrize("game", list(GAMES))
def test_a_gamed_check_never_completes_while_the_bug_is_in_place(tmp_path: Path, game: str) -> None:
    """Each way of gaming the check, alone, leaves the pinned gate failing: the run ends
    without completing, and no commit of the run fixed ``add()``. One iteration is enough to
    show it: the gate after the agent's task fails, and the run never completes."""
    body, gate, files = GAMES[game]
    root = buggy_project(tmp_path, body, gate=gate, files=files, iterations=1)
    result = ralph("run", cwd=root, timeout=300)
    assert ended(root) is not TerminationReason.COMPLETED, result.stdout + result.stderr
    finished = [e for e in stored_events(root) if isinstance(e, GateFinished)]
    assert finished
    assert all(e.pinned is not None for e in finished)
    assert GateStatus.FAILED in {e.status for e in finished}


def test_the_failure_names_the_changes_the_pinned_gate_ignored(tmp_path: Path) -> None:
    """The agent changed the expected values: the gate fact says which commit it was pinned
    to and that tests/test_calc.py was put back, and the developer's next prompt says its
    changes to it were not used."""
    body = GAMES["the expected values changed"][0]
    root = buggy_project(tmp_path, body)
    ralph("run", cwd=root, timeout=300)
    events = stored_events(root)
    (start,) = [e for e in events if isinstance(e, RunStarted)]
    assert start.loop.pin is GatePin.BASE
    base = subprocess.run(
        ["git", "rev-parse", "main~0"], cwd=root, capture_output=True, text=True
    ).stdout.strip()
    first = next(e for e in events if isinstance(e, GateFinished))
    assert first.restored == ("tests/test_calc.py",)
    assert first.pinned == base  # no commit of the run's: the base is still main's tip
    prompts = sorted((root / ".ralph").glob("prompt-*.md"))
    told = next(p.read_text() for p in prompts if "build.blocked" in p.read_text())
    assert f"pinned to {base[:12]}" in told
    assert "with the base's tests/test_calc.py: your changes to them were not used" in told
    # The work tree is the agent's, untouched by the gate.
    assert "== -1" in (root / "tests" / "test_calc.py").read_text()


def test_a_blocking_hook_the_agent_rewrote_still_keeps_the_key_out(tmp_path: Path) -> None:
    """The agent fixes add() but writes a key and rewrites the hook that guards it to
    ``exit 0``: the hook runs as the base has it, blocks every commit, and no commit holds
    the key."""
    body = write("calc.py", FIXED) + write("settings.py", 'token = "KEY-314159"\n')
    body += write("ci-hooks/no-secrets.sh", "exit 0\n")
    root = buggy_project(tmp_path, body, extra=HOOK, files={"ci-hooks/no-secrets.sh": NO_SECRETS})
    result = ralph("run", cwd=root, timeout=300)
    assert ended(root) is not TerminationReason.COMPLETED, result.stdout + result.stderr
    events = stored_events(root)
    ran = [e for e in events if isinstance(e, HookRan)]
    assert ran
    assert all(e.status is GateStatus.FAILED for e in ran)
    assert "a key is in the tree" in ran[0].tail
    assert not any(isinstance(e, CommitCreated) for e in events)
    log = subprocess.run(
        ["git", "log", "--all", "-p"], cwd=root, capture_output=True, text=True
    ).stdout
    assert "KEY-314159" not in log


def test_a_legitimate_fix_with_a_new_test_completes_in_one_iteration(tmp_path: Path) -> None:
    """The agent fixes add() and adds a test of its own: the person's tests pass in the
    pinned world, then the agent's new test with them, and the run completes at once."""
    new_test = "from calc import add\n\n\ndef test_add_negative():\n    assert add(-1, -2) == -3\n"
    body = write("calc.py", FIXED) + write("tests/test_negative.py", new_test)
    root = buggy_project(tmp_path, body)
    result = ralph("run", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    assert ended(root) is TerminationReason.COMPLETED
    assert len([e for e in events if isinstance(e, DevelopmentIterationStarted)]) == 1
    finished = [e for e in events if isinstance(e, GateFinished)]
    assert [e.status for e in finished] == [GateStatus.PASSED, GateStatus.PASSED]
    assert all(e.restored == () for e in finished)
    # The person's two tests passed alone, then all three with the agent's.
    added = root / finished[0].log_path
    assert added.name.endswith("-added.log")
    assert "3 passed" in added.read_text()
    assert "2 passed" in added.with_name(added.name.replace("-added", "")).read_text()


def test_tests_editable_lets_a_legitimate_change_of_an_expected_value_through(
    tmp_path: Path,
) -> None:
    """With ``--tests-editable`` the gate runs the tests as the agent left them: the agent
    declares subtraction the intended behaviour by changing the expected values, and the run
    completes, recorded as not pinned."""
    body = GAMES["the expected values changed"][0]
    root = buggy_project(tmp_path, body)
    result = ralph("run", "--tests-editable", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    events = stored_events(root)
    (start,) = [e for e in events if isinstance(e, RunStarted)]
    assert start.loop.pin is GatePin.OFF
    finished = [e for e in events if isinstance(e, GateFinished)]
    assert finished
    assert all(e.pinned is None and e.status is GateStatus.PASSED for e in finished)
    assert ended(root) is TerminationReason.COMPLETED
