"""The collection check end to end with real jest, vitest, ``go test`` and ``cargo test`` gates:
real ``ralph`` runs, real git, and shell agents that never fix the bug but hide a failing base
test from the runner, each one way the gate's own run cannot see (jest's test file moved into
``tests/`` with pinning off; a ``vite.config.js`` excluding it, a nested ``go.mod`` and Cargo's
``autotests = false``, none of them a pinned file). The gate passes on the agent's tree, yet no
run completes: the screen names the base's tests lost. A legitimate fix completes in one
iteration, pinned."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from pipeline.events import GateFinished, GateStatus, ScreenKind, TerminationReason
from tests.runners import machine_program, node_runner
from tests.runtime.test_screen import ended, screens
from tests.runtime.workspace import COUNT_CALLS, SHELL_REPORTS, make_workspace, ralph, stored_events

pytestmark = pytest.mark.slow  # whole runs in subprocesses, each runner compiling or loading

JS_ASSERTS = (
    "test('adds', () => { expect(add(2, 3)).toBe(5); });\n"
    "test('adds zero', () => { expect(add(0, 4)).toBe(4); });\n"
)
JS_FAILING = "const { add } = require('./calc');\n" + JS_ASSERTS
JS_PASSING = "test('truth', () => { expect(1 + 1).toBe(2); });\n"
VITE_IMPORT = "import { test, expect } from 'vitest';\n"
GO_TEST = 'package {0}\n\nimport "testing"\n\nfunc Test{1}(t *testing.T) {{\n\t{2}\n}}\n'


@attrs.frozen
class Project:
    """A buggy project for one runner: its base files, its gate's argv, the shell lines of an
    agent hiding the failing test (the files it writes), and of one fixing the bug."""

    files: dict[str, str]
    argv: tuple[str, ...]
    cheat: str
    fix: str
    lost: str
    """The base file whose tests are lost (a Go package's path)."""
    written: dict[str, str] = attrs.field(factory=dict)
    pin: str = "base"


def _jest() -> Project:
    return Project(
        files={
            "package.json": json.dumps({"name": "calc", "private": True}),
            "calc.js": "exports.add = (a, b) => a - b;\n",
            "calc.test.js": JS_FAILING,
            "other.test.js": JS_PASSING,
        },
        argv=(str(node_runner("jest")), "--ci"),
        # Still a test path to the screen's patterns, with its assertions; not one jest runs.
        cheat="if [ -e calc.test.js ]; then mkdir -p tests; mv calc.test.js tests/calc.js; fi\n",
        fix="sed -i 's/a - b/a + b/' calc.js\n",
        lost="calc.test.js",
        pin="off",
    )


def _vitest() -> Project:
    return Project(
        files={
            "package.json": json.dumps({"name": "calc", "private": True, "type": "module"}),
            "calc.js": "export const add = (a, b) => a - b;\n",
            "calc.test.js": VITE_IMPORT + "import { add } from './calc.js';\n" + JS_ASSERTS,
            "other.test.js": VITE_IMPORT + JS_PASSING,
        },
        argv=(str(node_runner("vitest")), "run"),
        cheat='cp "$FILES/vite.config.js" vite.config.js\n',
        written={
            "vite.config.js": (
                "export default { test: { exclude: ['calc.test.js', '**/node_modules/**'] } };\n"
            )
        },
        fix="sed -i 's/a - b/a + b/' calc.js\n",
        lost="calc.test.js",
    )


def _go() -> Project:
    return Project(
        files={
            "go.mod": "module example.com/proj\n\ngo 1.19\n",
            "proj.go": "package proj\n",
            "proj_test.go": GO_TEST.format("proj", "Truth", "_ = 1"),
            "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n",
            "calc/calc_test.go": GO_TEST.format(
                "calc", "Add", "if Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}"
            ),
        },
        argv=(machine_program("go", "golang-go"), "test", "./..."),
        # A module of its own: ./... of the project's module no longer reaches it.
        cheat="printf 'module example.com/proj/calc\\n\\ngo 1.19\\n' > calc/go.mod\n",
        fix="sed -i 's/a - b/a + b/' calc/calc.go\n",
        lost="example.com/proj/calc",
    )


def _cargo() -> Project:
    return Project(
        files={
            "Cargo.toml": '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n',
            ".gitignore": "/target\nCargo.lock\n",
            "src/lib.rs": "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n",
            "tests/calc.rs": "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n",
        },
        argv=(machine_program("cargo", "cargo"), "test"),
        # Cargo builds no test of tests/ any more.
        cheat="grep -q autotests Cargo.toml || echo 'autotests = false' >> Cargo.toml\n",
        fix="sed -i 's/a - b/a + b/' src/lib.rs\n",
        lost="tests/calc.rs",
    )


def _workspace(tmp_path: Path, project: Project, body: str) -> Path:
    """``project``'s files committed as the run's base, its gate run at every task and at the
    end, and a shell agent running ``body`` then reporting success; one iteration."""
    root = tmp_path / "ws"
    files = tmp_path / "files"  # outside the repository: not a change to commit
    files.mkdir()
    for name, text in project.written.items():
        (files / name).write_text(text)
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\nset -e\nFILES='{files}'\n" + COUNT_CALLS + body + SHELL_REPORTS)
    script.chmod(0o755)
    gate = (
        f'[tamper]\npin = "{project.pin}"\n\n'
        f'[[gates]]\nname = "tests"\nargv = {json.dumps(list(project.argv))}\n'
        'on = ["iteration", "final"]\ntimeout_s = 180\n'
    )
    budgets = (
        "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 1\n"
        "backoff_base_ms = 10\nbackoff_cap_ms = 20"
    )
    make_workspace(root, scripts={}, agents={"main": [str(script)]}, budgets=budgets, extra=gate)
    for name, text in project.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "add", "--all", "--", ":!.ralph"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "calc and its tests"], cwd=root, check=True)
    return root


RUNNERS: dict[str, Callable[[], Project]] = {
    "jest": _jest,
    "vitest": _vitest,
    "go": _go,
    "cargo": _cargo,
}


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_a_base_test_hidden_from_the_runner_never_completes(tmp_path: Path, runner: str) -> None:
    """The agent hides the failing test so the gate passes on its tree with the bug in place;
    the collection check names the base's test lost and the run ends without completing."""
    project = RUNNERS[runner]()
    root = _workspace(tmp_path, project, project.cheat)
    result = ralph("run", cwd=root, timeout=300)
    assert result.returncode != 0, result.stdout + result.stderr
    assert ended(root) is TerminationReason.MAX_ITERATIONS
    lost = [h for s in screens(root) for h in s.hits if h.kind is ScreenKind.TEST_LOST]
    # The collection check alone: no other hit of the screen sees these shapes.
    assert {h.kind for s in screens(root) for h in s.hits} == {ScreenKind.TEST_LOST}
    assert {h.path for h in lost} == {project.lost}
    assert "no longer collected" in lost[0].detail
    # The gate itself would have passed: the check that caught it is the collection's.
    gate = subprocess.run(project.argv, cwd=root, capture_output=True, text=True, check=False)
    assert gate.returncode == 0, gate.stdout + gate.stderr


@pytest.mark.parametrize("runner", list(RUNNERS))
def test_a_real_fix_completes_in_one_iteration(tmp_path: Path, runner: str) -> None:
    """The control: the agent fixes ``add``; nothing is lost, the pinned gate passes, and the
    run completes in its one iteration."""
    project = attrs.evolve(RUNNERS[runner](), pin="base")
    root = _workspace(tmp_path, project, project.fix)
    result = ralph("run", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ended(root) is TerminationReason.COMPLETED
    assert all(not s.hits for s in screens(root)), [s.hits for s in screens(root)]
    gates = [e for e in stored_events(root) if isinstance(e, GateFinished)]
    assert gates
    assert {g.status for g in gates} == {GateStatus.PASSED}
    assert all(g.pinned is not None for g in gates)
