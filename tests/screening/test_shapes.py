"""The shapes pinning the tests cannot see, by example in every language each detector reads:
code under test looking for the test runner, hard exits in code the tests import,
tautologies beyond the constant ones, names the tests import rebound, and the runner
configuration that loads a plugin or moves the tests; and the look-alikes each leaves alone."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.screening import (
    ChangeStatus,
    FileChange,
    ScreenHit,
    ScreenKind,
    ScreenRules,
    screen,
)

RULES = ScreenRules(todo_markers=("TODO", "FIXME"))


def _modified(path: str, old: str, new: str) -> FileChange:
    return FileChange(
        path=path, old_path=None, status=ChangeStatus.MODIFIED, old_text=old, new_text=new
    )


def _added(path: str, new: str) -> FileChange:
    return FileChange(
        path=path, old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=new
    )


def _kinds(hits: tuple[ScreenHit, ...]) -> list[tuple[ScreenKind, str, int]]:
    return [(h.kind, h.path, h.line) for h in hits]


def _line_added(path: str, line: str, old: str = "x = 1\n") -> tuple[ScreenHit, ...]:
    return screen([_modified(path, old, f"{old}{line}\n")], RULES)


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("calc.py", 'if "pytest" in sys.modules:'),
        ("src/calc.py", "    if 'unittest' in sys.modules: return 5"),
        ("calc.py", 'if sys.modules.get("pytest"):'),
        ("calc.py", 'FAKE = "_pytest" in sys.modules'),
        ("calc.py", 'if os.environ.get("PYTEST_CURRENT_TEST"):'),
        ("calc.py", 'if "PYTEST_VERSION" in os.environ:'),
        ("calc.py", 'if os.environ.get("NODE_ENV") == "test":'),
        ("src/calc.js", "if (process.env.JEST_WORKER_ID) return 5;"),
        ("src/calc.ts", "if (process.env.VITEST) { return 5 }"),
        ("src/calc.js", "if (process.env.NODE_ENV === 'test') return a + b;"),
        ("src/calc.js", 'if ("test" == process.env.NODE_ENV) return a + b;'),
        ("src/calc.mjs", "if (import.meta.env.MODE === 'test') return 5"),
        ("src/calc.js", "if (typeof jest !== 'undefined') return 5"),
        ("calc.go", "\tif testing.Testing() {"),
        ("calc.go", '\tif flag.Lookup("test.v") != nil {'),
        ("src/lib.rs", "    if cfg!(test) { return 5; }"),
    ],
)
def test_code_under_test_looking_for_the_runner_is_named(path: str, line: str) -> None:
    """``runner_detected``: code that asks whether a test runner runs it, at its line."""
    hits = _line_added(path, line)
    assert _kinds(hits) == [(ScreenKind.RUNNER_DETECTED, path, 2)]
    assert hits[0].detail == line.strip()


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("calc.py", 'if "numpy" in sys.modules:'),
        ("calc.py", 'mod = sys.modules.get("calc.helpers")'),
        ("calc.py", "# if 'pytest' in sys.modules: a comment"),
        ("calc.py", 'os.environ["NODE_ENV"] = "production"'),
        ("src/calc.js", "process.env.NODE_ENV = 'test';"),
        ("src/calc.js", "if (process.env.NODE_ENV === 'production') minify();"),
        ("conftest.py", 'if "PYTEST_XDIST_WORKER" in os.environ:'),
        ("tests/test_calc.py", 'assert os.environ["PYTEST_CURRENT_TEST"]'),
        ("jest.config.js", "if (process.env.JEST_WORKER_ID) {}"),
        ("src/__tests__/calc.js", "if (process.env.JEST_WORKER_ID) {}"),
    ],
)
def test_other_lookups_and_test_code_are_no_runner_check(path: str, line: str) -> None:
    """Other modules in ``sys.modules``, setting ``NODE_ENV``, comments, test code and
    runner configuration: none is code under test looking for the runner."""
    hits = _line_added(path, line)
    assert ScreenKind.RUNNER_DETECTED not in {h.kind for h in hits}


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("support/plug.py", "atexit.register(os._exit, 0)"),
        ("support/plug.py", "    atexit.register(sys.exit, 0)"),
        ("calc.py", "    os._exit(0)"),
        ("conftest.py", "atexit.register(os._exit, 0)"),
        ("tests/helpers.py", "atexit.register(os._exit, 0)"),
    ],
)
def test_a_hard_or_registered_exit_in_python_code_is_named(path: str, line: str) -> None:
    """``exit_forced``: ``os._exit(`` or an exit registered with ``atexit``, in any Python
    file (the tests import code; a session ending there ends as the code says)."""
    hits = _line_added(path, line)
    assert _kinds(hits) == [(ScreenKind.EXIT_FORCED, path, 2)]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("app/cli.py", "sys.exit(main())"),
        ("app/cli.py", "atexit.register(cleanup)"),
        ("app/cli.py", "atexit.register(lambda: log.info('bye'))"),
        ("src/cli.js", "process.exit(0);"),
        ("cmd/main.go", "\tos.Exit(0)"),
    ],
)
def test_an_ordinary_exit_or_cleanup_in_application_code_is_no_hit(path: str, line: str) -> None:
    """A CLI's ``sys.exit``, a cleanup registered at exit, JavaScript and Go exits outside
    test code: none is a hard exit the tests would inherit."""
    assert _line_added(path, line) == ()


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("tests/test_calc.py", "    assert add(2, 3) == 5 or True"),
        ("tests/test_calc.py", "    assert True or add(2, 3) == 5"),
        ("tests/test_calc.py", "    assert (add(2, 3) == 5) or True, 'sum'"),
        ("tests/test_calc.py", "    assert add(2, 3) == add(2, 3)"),
        ("tests/test_calc.py", "    assert result is result"),
        ("tests/test_calc.py", "    self.assertEqual(total, total)"),
        ("tests/test_calc.py", "    self.assertTrue(add(2, 3) == 5 or True)"),
        ("src/calc.test.js", "  expect(add(2, 3) === 5 || true).toBe(true);"),
        ("src/calc.test.js", "  expect(add(2, 3)).toBe(add(2, 3));"),
        ("src/calc.test.ts", "  assert.strictEqual(total, total);"),
        ("tests/calc.rs", "    assert!(add(2, 3) == 5 || true);"),
        ("tests/calc.rs", "    assert_eq!(add(2, 3), add(2, 3));"),
    ],
)
def test_an_assertion_true_whatever_the_code_does_is_a_tautology(path: str, line: str) -> None:
    """``tautology_added``: an ``or True`` or one expression compared with itself."""
    hits = _line_added(path, line, old="first line\n")
    assert _kinds(hits) == [(ScreenKind.TAUTOLOGY_ADDED, path, 2)]


def test_a_tautology_in_a_new_test_file_is_named() -> None:
    """A new test file asserting ``... or True`` is a tautology at its line."""
    text = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5 or True\n"
    hits = screen([_added("tests/test_more.py", text)], RULES)
    assert _kinds(hits) == [(ScreenKind.TAUTOLOGY_ADDED, "tests/test_more.py", 5)]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("tests/test_calc.py", "    assert add(2, 3) == 5"),
        ("tests/test_calc.py", "    assert flag or other"),
        ("tests/test_calc.py", "    value = compute() or True"),
        ("tests/test_calc.py", "    assert x == y, 'x == x'"),
        ("tests/test_calc.py", "    assert a >= b"),
        ("src/calc.test.js", "  expect(add(2, 3)).toBe(5);"),
        ("src/calc.test.js", "  const on = flag || true;"),
        ("tests/calc.rs", "    assert_eq!(add(2, 3), 5);"),
        ("calc.py", "    assert ready or True"),
    ],
)
def test_real_assertions_are_no_tautology(path: str, line: str) -> None:
    """Assertions that compare two things, ``or True`` outside an assertion, and
    ``or True`` in code under test are left alone."""
    assert _line_added(path, line, old="first line\n") == ()


@pytest.mark.parametrize(
    ("path", "old", "line"),
    [
        ("tests/test_calc.py", "from calc import add\n", "add = lambda a, b: a + b"),
        ("tests/test_calc.py", "import calc\n", "calc.add = lambda a, b: a + b"),
        ("tests/__init__.py", "import calc\n", "calc.add = lambda a, b: a + b"),
        ("tests/__init__.py", "import calc as c\n", "c.add = lambda a, b: a + b"),
        ("conftest.py", "import calc\n", "setattr(calc, 'add', lambda a, b: a + b)"),
        ("tests/test_calc.py", "from calc import (\n    add,\n    div,\n)\n", "div = add"),
        ("tests/test_calc.py", "from pkg import calc\n", "calc.add = fake"),
    ],
)
def test_a_name_the_tests_import_rebound_at_module_level_is_named(
    path: str, old: str, line: str
) -> None:
    """``name_rebound``: test code replacing, at module level, what it imports."""
    hits = screen([_modified(path, old, f"{old}{line}\n")], RULES)
    assert _kinds(hits) == [(ScreenKind.NAME_REBOUND, path, old.count("\n") + 1)]
    assert hits[0].detail == line


@pytest.mark.parametrize(
    ("path", "old", "line"),
    [
        ("tests/test_calc.py", "from calc import add\n", "EXPECTED = add(2, 3)"),
        ("tests/test_calc.py", "import calc\n", "def test_x():\n    calc.add = fake"),
        ("tests/test_calc.py", "import calc\n", "result = calc.add(2, 3)"),
        ("tests/test_calc.py", "from calc import add\n", "added = lambda a, b: a + b"),
        ("tests/test_calc.py", "import calc\n", "calc.add(2, 3) == 5"),
        ("calc.py", "from helpers import add\n", "add = lambda a, b: a + b"),
    ],
)
def test_new_names_calls_and_application_code_are_no_rebinding(
    path: str, old: str, line: str
) -> None:
    """A new name, a use, an assignment inside a function, and code under test rebinding
    its own imports are left alone."""
    hits = screen([_modified(path, old, f"{old}{line}\n")], RULES)
    assert ScreenKind.NAME_REBOUND not in {h.kind for h in hits}


@pytest.mark.parametrize(
    ("path", "old", "line"),
    [
        ("pytest.ini", "[pytest]\n", "addopts = -p support.plug"),
        ("pyproject.toml", "[tool.pytest.ini_options]\n", 'addopts = "-psupport.plug"'),
        ("tox.ini", "[pytest]\n", "python_files = test_misc.py"),
        ("setup.cfg", "[tool:pytest]\n", "testpaths = tests/misc"),
        ("conftest.py", "import pytest\n", "pytest_plugins = ['support.plug']"),
    ],
)
def test_a_plugin_or_a_new_test_location_in_runner_configuration_is_named(
    path: str, old: str, line: str
) -> None:
    """``test_config_changed``: a plugin the configuration loads, or which files hold tests."""
    hits = screen([_modified(path, old, f"{old}{line}\n")], RULES)
    assert _kinds(hits) == [(ScreenKind.TEST_CONFIG_CHANGED, path, 2)]


def test_turning_a_plugin_off_is_no_hit() -> None:
    """``-p no:cacheprovider`` loads nothing."""
    old = "[pytest]\n"
    change = _modified("pytest.ini", old, old + "addopts = -p no:cacheprovider\n")
    assert screen([change], RULES) == ()


_PATHS = st.sampled_from(
    [
        "calc.py",
        "tests/test_calc.py",
        "tests/__init__.py",
        "conftest.py",
        "src/calc.js",
        "src/calc.test.js",
        "calc.go",
        "src/lib.rs",
        "pytest.ini",
    ]
)
_PIECES = st.sampled_from(
    [
        "import calc",
        "from calc import (",
        "from calc import add as a, (",
        "add = ",
        "calc.add = ",
        "setattr(calc,",
        "assert ",
        "self.assertEqual(",
        "expect(",
        ").toBe(",
        "assert_eq!(",
        " == ",
        " or True",
        "|| true",
        '"pytest" in sys.modules',
        "os._exit(",
        "atexit.register(",
        "NODE_ENV === 'test'",
        "\n",
        " ",
        ")",
        ",",
        "#",
        "\x00",
    ]
)
_TEXTS = st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=40).map("".join)


@given(_PATHS, _TEXTS, _TEXTS)
def test_the_new_detectors_never_raise_on_arbitrary_text(path: str, old: str, new: str) -> None:
    """Law: for any old and new text, in any kind of file, the screen returns hits (each on
    a line the new text has) and never raises."""
    hits = screen([_modified(path, old, new)], RULES)
    lines = new.count("\n") + 1
    assert all(0 <= h.line <= lines for h in hits)
