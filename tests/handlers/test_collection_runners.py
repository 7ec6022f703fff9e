"""The collection check with real jest, vitest, ``go test`` and ``cargo test``: for each, a base
test the agent's tree no longer collects (renamed out of the runner's sight, made no test, or
ignored) is lost, named with where it was; a test moved to another place the runner collects
is not; and a tree the runner cannot load is a collection failure."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.events import Count, GateSpec, ScreenHit, ScreenKind
from pipeline.handlers.runtime import Collector, GitPolicy, WorkspaceLayout
from tests.runners import machine_program, node_runner
from tests.runtime.workspace import commit_all, make_workspace

pytestmark = pytest.mark.slow  # a real runner collects twice a test: a second or more each

JS_CALC = "exports.add = (a, b) => a - b;\n"
JEST_TESTS = (
    "const { add } = require('./calc');\n"
    "describe('add', () => {\n"
    "  test('adds', () => { expect(add(2, 3)).toBe(5); });\n"
    "  test('adds zero', () => { expect(add(0, 4)).toBe(4); });\n"
    "});\n"
)
VITEST_CALC = "export const add = (a, b) => a - b;\n"
VITEST_TESTS = (
    "import { describe, test, expect } from 'vitest';\nimport { add } from './calc.js';\n"
    + JEST_TESTS.split("\n", 1)[1]
)
GO_CALC = "package calc\n\nfunc Add(a, b int) int { return a - b }\n"
GO_TESTS = (
    'package calc\n\nimport "testing"\n\n'
    "func TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n\n"
    "func TestAddZero(t *testing.T) {\n\tif Add(0, 4) != 4 {\n\t\tt.Fatal(Add(0, 4))\n\t}\n}\n"
)
RUST_CALC = "pub fn add(a: i64, b: i64) -> i64 {\n    a - b\n}\n"
RUST_TESTS = (
    "#[test]\nfn adds() {\n    assert_eq!(calc::add(2, 3), 5);\n}\n\n"
    "#[test]\nfn adds_zero() {\n    assert_eq!(calc::add(0, 4), 4);\n}\n"
)
CARGO_TOML = '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n'


def _project(tmp_path: Path, files: dict[str, str]) -> tuple[Path, str]:
    """A repository whose base commit holds ``files``; its base's id."""
    root = tmp_path / "ws"
    make_workspace(root, scripts={}, agents={"main": ["true"]})
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    commit_all(root, "calc and its tests")
    base = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, check=True, capture_output=True, text=True
    ).stdout.strip()
    return root, base


def _hits(root: Path, base: str, argv: tuple[str, ...]) -> tuple[ScreenHit, ...]:
    gate = GateSpec(name="tests", argv=argv, timeout_s=Count(120))
    return Collector(
        layout=WorkspaceLayout(root=root),
        run_id="run-1",
        gate_env={},
        commands={},
        grace_s=1.0,
        policy=GitPolicy(),
    ).hits(base, (gate,))


def _jest(tmp_path: Path) -> tuple[Path, str, tuple[str, ...]]:
    files = {"package.json": '{"name": "calc"}\n', "calc.js": JS_CALC}
    root, base = _project(tmp_path, {**files, "calc.test.js": JEST_TESTS})
    return root, base, (str(node_runner("jest")), "--ci")


def _vitest(tmp_path: Path) -> tuple[Path, str, tuple[str, ...]]:
    files = {"package.json": '{"name": "calc", "type": "module"}\n', "calc.js": VITEST_CALC}
    root, base = _project(tmp_path, {**files, "calc.test.js": VITEST_TESTS})
    return root, base, (str(node_runner("vitest")), "run")


def _go(tmp_path: Path) -> tuple[Path, str, tuple[str, ...]]:
    files = {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc.go": GO_CALC}
    root, base = _project(tmp_path, {**files, "calc_test.go": GO_TESTS})
    return root, base, (machine_program("go", "golang-go"), "test", "./...")


def _cargo(tmp_path: Path) -> tuple[Path, str, tuple[str, ...]]:
    files = {"Cargo.toml": CARGO_TOML, ".gitignore": "/target\nCargo.lock\n"}
    root, base = _project(tmp_path, {**files, "src/lib.rs": RUST_CALC, "tests/calc.rs": RUST_TESTS})
    return root, base, (machine_program("cargo", "cargo"), "test")


JS_LOST, GO_LOST, RS_LOST = "calc.test.js::add", "example.com/calc::", "tests/calc.rs::"
Project = Callable[[Path], tuple[Path, str, tuple[str, ...]]]


@pytest.mark.parametrize(
    ("project", "before", "after", "lost"),
    [
        (_jest, "calc.test.js", "calc.checks.js", f"{JS_LOST} > adds, {JS_LOST} > adds zero"),
        (_vitest, "calc.test.js", "calc.checks.js", f"{JS_LOST} > adds, {JS_LOST} > adds zero"),
        (_go, "calc_test.go", "calc_checks.go.txt", f"{GO_LOST}TestAdd, {GO_LOST}TestAddZero"),
        (_cargo, "tests/calc.rs", "tests/calc/checks.rs", f"{RS_LOST}adds, {RS_LOST}adds_zero"),
    ],
    ids=["jest", "vitest", "go", "cargo"],
)
def test_a_test_file_moved_out_of_the_runner_s_sight_loses_its_tests(
    tmp_path: Path, project: Project, before: str, after: str, lost: str
) -> None:
    """The file is still there under a name the runner never collects: both of its tests are
    lost, named with the place they were collected from on the base."""
    root, base, argv = project(tmp_path)
    (root / after).parent.mkdir(parents=True, exist_ok=True)
    (root / before).rename(root / after)
    hits = _hits(root, base, argv)
    assert [h.kind for h in hits] == [ScreenKind.TEST_LOST], hits
    assert hits[0].detail == f"gate 'tests': 2 tests no longer collected: {lost}"


@pytest.mark.parametrize(
    ("project", "path", "old", "new"),
    [
        (_jest, "calc.test.js", "test('adds zero'", "test.skip('adds zero'"),
        (_vitest, "calc.test.js", "test('adds zero'", "test.skip('adds zero'"),
        (_go, "calc_test.go", "func TestAddZero(", "func testAddZero("),
        (_cargo, "tests/calc.rs", "#[test]\nfn adds_zero", "#[test]\n#[ignore]\nfn adds_zero"),
    ],
    ids=["jest", "vitest", "go", "cargo"],
)
def test_one_test_made_no_test_or_skipped_is_lost(
    tmp_path: Path, project: Project, path: str, old: str, new: str
) -> None:
    """jest's ``test.skip`` still declares the test (jest cannot tell a skip apart without
    running: the ``skip_added`` detector reads it), so it is not lost by collection; vitest
    lists only tests that run, so a skipped one is lost; a Go function renamed out of
    ``Test*`` and a Rust test given ``#[ignore]`` are lost."""
    root, base, argv = project(tmp_path)
    target = root / path
    target.write_text(target.read_text().replace(old, new))
    hits = _hits(root, base, argv)
    if project is _jest:
        assert hits == ()
        return
    assert [h.kind for h in hits] == [ScreenKind.TEST_LOST], hits
    assert "1 test" in hits[0].detail
    assert ("collected but marked ignore" in hits[0].detail) is (project is _cargo)


@pytest.mark.parametrize(
    ("project", "before", "after"),
    [
        (_jest, "calc.test.js", "test/calc.spec.js"),
        (_vitest, "calc.test.js", "test/calc.spec.js"),
        (_go, "calc_test.go", "add_test.go"),
        (_cargo, "tests/calc.rs", "tests/sums.rs"),
    ],
    ids=["jest", "vitest", "go", "cargo"],
)
def test_a_test_file_moved_where_the_runner_collects_it_loses_nothing(
    tmp_path: Path, project: Project, before: str, after: str
) -> None:
    """A test is known by its name, not its file: moved to another collected file, it is
    the same test."""
    root, base, argv = project(tmp_path)
    moved = (root / before).read_text().replace("'./calc", "'../calc")
    (root / before).unlink()
    (root / after).parent.mkdir(parents=True, exist_ok=True)
    (root / after).write_text(moved)
    assert _hits(root, base, argv) == ()


@pytest.mark.parametrize(
    ("project", "path"),
    [(_jest, "calc.test.js"), (_vitest, "calc.test.js"), (_go, "calc.go"), (_cargo, "src/lib.rs")],
    ids=["jest", "vitest", "go", "cargo"],
)
def test_a_tree_the_runner_cannot_load_is_a_collection_failure(
    tmp_path: Path, project: Project, path: str
) -> None:
    """Broken code is a ``collection_failed`` hit with how the runner ended, never every
    test lost."""
    root, base, argv = project(tmp_path)
    (root / path).write_text((root / path).read_text() + "\n}}} not code (\n")
    hits = _hits(root, base, argv)
    assert [h.kind for h in hits] == [ScreenKind.COLLECTION_FAILED], hits
    assert hits[0].detail.startswith("gate 'tests': collecting the tests failed (exit ")


def test_a_runner_in_the_project_s_ignored_node_modules_collects_the_base_too(
    tmp_path: Path,
) -> None:
    """``npx --no -- jest`` finds jest in the project's ``node_modules``, which git ignores:
    the base's checkout has it linked in, as a pinned gate's world does, so the base is
    collected (not a ``screen_incomplete`` warning) and the test moved away is lost."""
    jest = node_runner("jest")
    files = {"package.json": '{"name": "calc"}\n', ".gitignore": "node_modules\n"}
    root, base = _project(tmp_path, {**files, "calc.js": JS_CALC, "calc.test.js": JEST_TESTS})
    (root / "node_modules").symlink_to(jest.parent.parent)  # the cache's node_modules
    (root / "calc.test.js").rename(root / "calc.checks.js")
    hits = _hits(root, base, ("npx", "--no", "--", "jest", "--ci"))
    assert [h.kind for h in hits] == [ScreenKind.TEST_LOST], hits
    assert hits[0].path == "calc.test.js"


@pytest.mark.parametrize(
    ("script", "collected"), [("jest --ci", True), ("jest --ci && echo done", False)]
)
def test_an_npm_test_gate_is_collected_when_its_script_is_one_plain_jest_command(
    tmp_path: Path, script: str, collected: bool
) -> None:
    """``npm test`` whose base script is ``jest --ci`` collects with that jest (from the
    project's ``node_modules``): the test moved away is lost; a script with shell syntax
    has no runner ralph knows for sure, and is not collected."""
    jest = node_runner("jest")
    package = json.dumps({"name": "calc", "scripts": {"test": script}})
    files = {"package.json": package, ".gitignore": "node_modules\n", "calc.js": JS_CALC}
    root, base = _project(tmp_path, {**files, "calc.test.js": JEST_TESTS})
    (root / "node_modules").symlink_to(jest.parent.parent)
    (root / "calc.test.js").rename(root / "calc.checks.js")
    hits = _hits(root, base, ("npm", "test", "--silent"))
    assert [h.kind for h in hits] == ([ScreenKind.TEST_LOST] if collected else []), hits
