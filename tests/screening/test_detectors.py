"""Each detector of the screen, by example, in every language it reads: what it catches,
how it names it, and the look-alike it leaves alone."""

from __future__ import annotations

import pytest

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    Language,
    Protection,
    ScreenHit,
    ScreenKind,
    ScreenRules,
    screen,
    splice,
)
from tests.screening.sources import SKIP_FORMS, Case, Project, changes, path_for, reported_name

LANGUAGES = list(Language)
RULES = ScreenRules(todo_markers=("TODO", "FIXME"))


def _project(language: Language) -> Project:
    return Project(language).with_file(
        path_for(language, "calc"), (Case("add", 2), Case("div", 1), Case("mul", 1))
    )


def _kinds(hits: tuple[ScreenHit, ...]) -> list[tuple[ScreenKind, str, int]]:
    return [(h.kind, h.path, h.line) for h in hits]


def _modified(path: str, old: str, new: str) -> FileChange:
    return FileChange(
        path=path, old_path=None, status=ChangeStatus.MODIFIED, old_text=old, new_text=new
    )


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_deleted_test_file_is_named_with_its_tests(language: Language) -> None:
    """``test_file_deleted``: the file's path and the tests that went nowhere."""
    before = _project(language)
    path = path_for(language, "calc")
    hits = screen(changes(before, before.without(path)), RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_FILE_DELETED, path, 0)]
    names = ", ".join(reported_name(language, n) for n in ("add", "div", "mul"))
    assert hits[0].detail == f"deleted (tests gone: {names})"


def test_a_test_file_renamed_out_of_test_code_is_a_deletion() -> None:
    """Renaming ``tests/test_calc.py`` to ``notes/calc.txt`` hides its tests from the runner."""
    before = _project(Language.PYTHON)
    old = path_for(Language.PYTHON, "calc")
    text = changes(Project(Language.PYTHON), before)[0].new_text
    change = FileChange(
        path="notes/calc.py",
        old_path=old,
        status=ChangeStatus.RENAMED,
        old_text=text,
        new_text=text,
    )
    hits = screen([change], RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_FILE_DELETED, old, 0)]
    assert hits[0].detail.startswith("renamed to notes/calc.py, not test code")


def test_a_deleted_file_whose_tests_moved_elsewhere_is_no_hit() -> None:
    """Splitting a test file into two is a move: every name is in some new text."""
    before = _project(Language.PYTHON)
    old = path_for(Language.PYTHON, "calc")
    after = (
        before.without(old)
        .with_file(path_for(Language.PYTHON, "add"), (Case("add", 2),))
        .with_file(path_for(Language.PYTHON, "rest"), (Case("div", 1), Case("mul", 1)))
    )
    assert screen(changes(before, after), RULES) == ()


def test_a_deleted_fixture_or_data_file_is_no_hit() -> None:
    """Files without test items (fixtures, data, helpers) may go."""
    gone = [
        FileChange(
            path="tests/data/input.json",
            old_path=None,
            status=ChangeStatus.DELETED,
            old_text="{}",
            new_text=None,
        ),
        FileChange(
            path="tests/helpers.py",
            old_path=None,
            status=ChangeStatus.DELETED,
            old_text="def make(): ...\n",
            new_text=None,
        ),
    ]
    assert screen(gone, RULES) == ()


@pytest.mark.parametrize("language", LANGUAGES)
def test_an_emptied_test_file_is_named(language: Language) -> None:
    """``test_file_emptied``: the file stays but declares no test any more."""
    before = _project(language)
    path = path_for(language, "calc")
    hits = screen(changes(before, before.with_file(path, ())), RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_FILE_EMPTIED, path, 0)]
    assert hits[0].detail.startswith("3 tests before, none now")


def test_inline_rust_tests_deleted_with_their_module_empty_the_file() -> None:
    """A test attribute in either image makes a file test code: ``src/lib.rs`` losing its
    ``#[cfg(test)] mod tests`` is emptied, though its new text has no attribute left."""
    code = "pub fn add(a: i32, b: i32) -> i32 { a + b }\n"
    tests = (
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(add(1, 1), 2); }\n}\n"
    )
    hits = screen([_modified("src/lib.rs", code + tests, code)], RULES)
    assert [(h.kind, h.path, h.detail) for h in hits] == [
        (ScreenKind.TEST_FILE_EMPTIED, "src/lib.rs", "1 test before, none now (tests gone: adds)")
    ]


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_removed_test_is_named_with_its_file(language: Language) -> None:
    """``test_removed`` (and the assertions it took): a net count, naming the gone test."""
    before = _project(language)
    path = path_for(language, "calc")
    after = before.with_file(path, (Case("add", 2), Case("mul", 1)))
    hits = screen(changes(before, after), RULES)
    assert _kinds(hits) == [
        (ScreenKind.TEST_REMOVED, path, 0),
        (ScreenKind.ASSERTIONS_REMOVED, path, 0),
    ]
    assert hits[0].detail == f"1 fewer test in all; gone here: {reported_name(language, 'div')}"
    assert hits[1].detail == "4 -> 3 assertions (1 fewer in all)"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_renamed_test_is_no_hit(language: Language) -> None:
    """``test_div`` renamed ``test_div_by_zero`` with its body kept changes no count."""
    before = _project(language)
    path = path_for(language, "calc")
    after = before.with_file(path, (Case("add", 2), Case("divbyzero", 1), Case("mul", 1)))
    assert screen(changes(before, after), RULES) == ()


@pytest.mark.parametrize(
    ("language", "form"),
    [(language, form) for language, forms in SKIP_FORMS.items() for form in forms],
)
def test_an_added_skip_is_named_at_its_line(language: Language, form: str) -> None:
    """``skip_added`` in every syntax the generated files use, at the marker's line."""
    before = _project(language)
    path = path_for(language, "calc")
    after = before.with_file(path, (Case("add", 2), Case("div", 1, form), Case("mul", 1)))
    change = changes(before, after)
    hits = screen(change, RULES)
    assert [(h.kind, h.path) for h in hits] == [(ScreenKind.SKIP_ADDED, path)]
    new_lines = (change[0].new_text or "").split("\n")
    assert new_lines[hits[0].line - 1].strip() == hits[0].detail


def test_a_moved_skip_is_no_hit() -> None:
    """A skip marker moved from one test to another changes no count."""
    before = Project(Language.PYTHON).with_file(
        "tests/test_a.py", (Case("a", 1, "@pytest.mark.skip"), Case("b", 1))
    )
    after = before.with_file("tests/test_a.py", (Case("a", 1), Case("b", 1, "@pytest.mark.skip")))
    assert screen(changes(before, after), RULES) == ()


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_removed_assertion_is_named_with_its_file(language: Language) -> None:
    """``assertions_removed``: old and new counts of the file, and the net loss."""
    before = _project(language)
    path = path_for(language, "calc")
    after = before.with_file(path, (Case("add", 1), Case("div", 1), Case("mul", 1)))
    hits = screen(changes(before, after), RULES)
    assert _kinds(hits) == [(ScreenKind.ASSERTIONS_REMOVED, path, 0)]
    assert hits[0].detail == "4 -> 3 assertions (1 fewer in all)"


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("tests/test_calc.py", "    assert True"),
        ("tests/test_calc.py", "    self.assertTrue(True)"),
        ("src/calc.test.js", "  expect(true).toBe(true);"),
        ("src/calc.test.js", "  assert(true);"),
        ("calc_test.go", "\tassert.True(t, true)"),
        ("tests/calc.rs", "    assert!(true);"),
        ("src/test/java/CalcTest.java", "        assertTrue(true);"),
    ],
)
def test_an_added_tautology_is_named(path: str, line: str) -> None:
    """``tautology_added``: a constant truth added to test code."""
    old = "first line\n"
    hits = screen([_modified(path, old, old + line + "\n")], RULES)
    assert (ScreenKind.TAUTOLOGY_ADDED, path, 2) in _kinds(hits)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("conftest.py", "    session.exitstatus = 0"),
        ("tests/test_calc.py", "os._exit(0)"),
        ("tests/test_calc.py", "sys.exit(0)"),
        ("src/calc.test.js", "process.exit(0);"),
        ("main_test.go", "\tos.Exit(0)"),
    ],
)
def test_a_forced_exit_in_test_code_or_config_is_named(path: str, line: str) -> None:
    """``exit_forced``: test code or a runner's configuration ends the run as passed."""
    hits = screen([_modified(path, "x = 1\n", f"x = 1\n{line}\n")], RULES)
    assert (ScreenKind.EXIT_FORCED, path, 2) in _kinds(hits)


def test_an_exit_in_application_code_is_not_the_screen_s_business() -> None:
    """A CLI's own ``sys.exit(0)`` is not test code."""
    assert screen([_modified("app/cli.py", "x = 1\n", "x = 1\nsys.exit(0)\n")], RULES) == ()


@pytest.mark.parametrize(
    ("path", "old", "line"),
    [
        ("pytest.ini", "[pytest]\n", "addopts = --deselect tests/test_calc.py::test_div"),
        (".pytest.ini", "[pytest]\n", "addopts = --deselect tests/test_calc.py::test_div"),
        ("pytest.toml", "[pytest]\n", 'addopts = ["--ignore=tests/slow"]'),
        ("tox.ini", "[pytest]\n", "addopts = --ignore=tests/slow"),
        ("setup.cfg", "[tool:pytest]\n", "addopts = -k 'not div'"),
        ("pyproject.toml", "[tool.pytest.ini_options]\n", 'addopts = "--ignore-glob=*div*"'),
        ("conftest.py", "import pytest\n", "def pytest_collection_modifyitems(items):"),
        ("conftest.py", "import pytest\n", "collect_ignore = ['test_calc.py']"),
        ("jest.config.js", "module.exports = {\n", "  testPathIgnorePatterns: ['calc'],"),
        ("vitest.config.ts", "export default {\n", "  exclude: ['**/calc.test.ts'],"),
        (".mocharc.yml", "spec: test\n", "ignore: test/calc.js"),
    ],
)
def test_a_runner_filter_is_named(path: str, old: str, line: str) -> None:
    """``test_config_changed``: an added line that deselects, ignores or filters tests."""
    hits = screen([_modified(path, old, old + line + "\n")], RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_CONFIG_CHANGED, path, 2)]
    assert hits[0].detail == line.strip()


@pytest.mark.parametrize("path", ["tox.ini", "setup.cfg", "pytest.ini"])
@pytest.mark.parametrize("brk", ["\x0c", "\r", "\x1c", "\u2028"])
def test_a_filter_behind_a_line_break_git_does_not_count_is_named(path: str, brk: str) -> None:
    """pytest's INI reader ends a line at a form feed, a lone CR or U+2028 too: a
    ``[pytest]`` header or a filter after one is read by pytest, so the screen reads it so."""
    header = "[tool:pytest]" if path == "setup.cfg" else "[pytest]"
    old = "[other]\nx = 1\n"
    new = f"[other]\nx = 1{brk}{header}{brk}python_files = nothing.py\n"
    hits = screen([_modified(path, old, new)], RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_CONFIG_CHANGED, path, 2)]
    assert hits[0].detail == "python_files = nothing.py"


@pytest.mark.parametrize(
    ("path", "old", "new", "kind"),
    [
        (
            "tests/test_calc.py",
            "from calc import add\n",
            "from calc import add\nx = 1\radd = lambda a, b: 3\n",
            ScreenKind.NAME_REBOUND,
        ),
        (
            "conftest.py",
            "import pytest\n",
            "import pytest\nx = 1\rcollect_ignore = ['test_calc.py']\n",
            ScreenKind.TEST_CONFIG_CHANGED,
        ),
        ("tests/a.test.js", "x = 1\n", "x = 1\ny\u2028it.skip('a', f)\n", ScreenKind.SKIP_ADDED),
        ("calc_test.go", "package calc\n", "package calc\nt.Skip\r()\n", ScreenKind.SKIP_ADDED),
    ],
    ids=["python-cr", "conftest-cr", "javascript-u2028", "go-cr-is-a-space"],
)
def test_a_statement_behind_the_language_s_own_line_break_is_read(
    path: str, old: str, new: str, kind: ScreenKind
) -> None:
    """Python and JavaScript end a line at a lone CR (JavaScript at U+2028 too): a statement
    after one is read as a line of its own, at git's line number; Go reads a CR as a space,
    so a call split by one is still one line."""
    assert _kinds(screen([_modified(path, old, new)], RULES)) == [(kind, path, 2)]


def test_other_tools_sections_are_not_runner_configuration() -> None:
    """An ``exclude`` for ruff in ``pyproject.toml`` filters no test."""
    old = "[tool.ruff]\n"
    assert screen([_modified("pyproject.toml", old, old + "exclude = ['x']\n")], RULES) == ()


def test_the_screen_reads_a_mixed_file_s_sections_as_a_pinned_gate_splices_them() -> None:
    """One reading of the runner's sections for both: an indented ``[pytest]`` continues a
    value in INI (pytest's parser reads it so, and the splice keeps it the agent's), so a
    filter under it is no runner configuration; an indented TOML header is one."""
    ini_old = "[flake8]\nselect =\n"
    ini_new = ini_old + "    [pytest]\n    exclude = tests\n"
    assert screen([_modified("tox.ini", ini_old, ini_new)], RULES) == ()
    assert splice("tox.ini", ini_old, ini_new) == ini_new
    toml_old = "[project]\n"
    toml_new = toml_old + '  [tool.pytest.ini_options]\naddopts = "-k not_div"\n'
    hits = screen([_modified("pyproject.toml", toml_old, toml_new)], RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_CONFIG_CHANGED, "pyproject.toml", 3)]


@pytest.mark.parametrize(
    ("change", "path", "detail"),
    [
        (_modified("ralph.toml", "a", "b"), "ralph.toml", "modified (the run's configuration)"),
        (
            FileChange(
                path=".github/workflows/ci.yml",
                old_path=None,
                status=ChangeStatus.DELETED,
                old_text="a",
                new_text=None,
            ),
            ".github/workflows/ci.yml",
            "deleted (a CI file)",
        ),
        (
            FileChange(
                path=".ci/run",
                old_path=None,
                status=ChangeStatus.ADDED,
                old_text=None,
                new_text="x",
            ),
            ".ci/run",
            "added (a CI file)",
        ),
        (
            FileChange(
                path="old/check.sh",
                old_path="scripts/check.sh",
                status=ChangeStatus.RENAMED,
                old_text="a",
                new_text="a",
            ),
            "scripts/check.sh",
            "renamed to old/check.sh (gate 'tests' runs it)",
        ),
        (_modified("Makefile", "a", "b"), "Makefile", "modified ([tamper] protect)"),
    ],
)
def test_protected_paths(change: FileChange, path: str, detail: str) -> None:
    """``protected_changed``: ralph.toml, CI files, and the globs the rules protect, with why."""
    rules = ScreenRules(
        protect=(
            Protection(pattern="scripts/check.sh", reason="gate 'tests' runs it"),
            Protection(pattern="Makefile", reason="[tamper] protect"),
        )
    )
    hits = screen([change], rules)
    assert [(h.kind, h.path, h.detail) for h in hits] == [
        (ScreenKind.PROTECTED_CHANGED, path, detail)
    ]


def test_an_unchanged_text_is_no_change() -> None:
    """A path listed with equal texts (a mode change) changes no protected content."""
    assert screen([_modified("ralph.toml", "a", "a")], RULES) == ()


def test_allowed_paths_are_never_hits() -> None:
    """``[tamper] allow``: a legacy test folder the task really removes."""
    before = Project(Language.PYTHON).with_file("tests/legacy/test_old.py", (Case("old", 1),))
    change = changes(before, before.without("tests/legacy/test_old.py"))
    assert screen(change, ScreenRules(allow=("tests/legacy/**",))) == ()
    assert screen(change, ScreenRules()) != ()


def test_an_added_todo_is_named_outside_markdown() -> None:
    """``todo_added``: more marker lines in a file than before; Markdown is prose."""
    todo = "x = 1  # TODO handle overflow\n"
    hits = screen(
        [
            _modified("app.py", "x = 1\n", todo),
            _modified("NOTES.md", "x\n", "x\n- TODO write the docs\n"),
        ],
        RULES,
    )
    assert [(h.kind, h.path, h.line, h.detail) for h in hits] == [
        (ScreenKind.TODO_ADDED, "app.py", 1, "x = 1  # TODO handle overflow")
    ]
    assert screen([_modified("app.py", todo, "y = 0\n" + todo)], RULES) == ()


def test_the_rules_choose_the_detectors() -> None:
    """Iteration scope screens tamper only; run scope may add the postconditions alone."""
    before = _project(Language.PYTHON)
    path = path_for(Language.PYTHON, "calc")
    skipped = before.with_file(
        path, (Case("add", 2, "@pytest.mark.xfail"), Case("div"), Case("mul"))
    )
    change = [*changes(before, skipped), _modified("app.py", "", "# TODO\n")]
    assert screen(change, ScreenRules(tamper=False)) == ()
    only_skips = screen(change, ScreenRules(tamper=False, no_skipped_tests=True))
    assert [h.kind for h in only_skips] == [ScreenKind.SKIP_ADDED]
    only_todos = screen(change, ScreenRules(tamper=False, todo_markers=("TODO",)))
    assert [h.kind for h in only_todos] == [ScreenKind.TODO_ADDED]


def test_a_hit_reads_as_one_line() -> None:
    """``summary`` is the form notices and reports show."""
    hit = ScreenHit(
        kind=ScreenKind.SKIP_ADDED, path="tests/test_calc.py", line=14, detail="@pytest.mark.skip"
    )
    assert hit.summary == "skip_added tests/test_calc.py:14: @pytest.mark.skip"
    whole = ScreenHit(kind=ScreenKind.TEST_FILE_DELETED, path="t.py", line=0, detail="deleted")
    assert whole.summary == "test_file_deleted t.py: deleted"
