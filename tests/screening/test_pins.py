"""Which files a pinned gate takes from the base, and the splice of a mixed file's runner part
(pure): the person's runner settings always win, the agent's other settings survive."""

from __future__ import annotations

import json
import tomllib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.screening import PinKind, named_files, pin_kind, splice


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("tests/test_calc.py", PinKind.TEST),
        ("tests/calc_checks.py", PinKind.TEST),
        ("tests/data/expected.json", PinKind.TEST),
        ("test/calc.test.js", PinKind.TEST),
        ("pkg/calc_test.go", PinKind.TEST),
        ("tests/__init__.py", PinKind.RUNNER),
        ("conftest.py", PinKind.RUNNER),
        ("src/conftest.py", PinKind.RUNNER),
        ("pytest.ini", PinKind.RUNNER),
        ("jest.config.ts", PinKind.RUNNER),
        ("Makefile", PinKind.RUNNER),
        ("pytest.py", PinKind.RUNNER),
        ("sitecustomize.py", PinKind.RUNNER),
        ("tox.ini", PinKind.MIXED),
        ("setup.cfg", PinKind.MIXED),
        ("pyproject.toml", PinKind.MIXED),
        ("package.json", PinKind.MIXED),
        ("calc.py", PinKind.FREE),
        ("src/__init__.py", PinKind.FREE),
        ("inspect.py", PinKind.STAND_IN),
        ("inspect.pyc", PinKind.STAND_IN),
        ("inspect/__init__.py", PinKind.STAND_IN),
        ("ast.cpython-311-x86_64-linux-gnu.so", PinKind.STAND_IN),
        ("iniconfig.py", PinKind.STAND_IN),
        ("email/template.html", PinKind.FREE),
        ("html/index.html", PinKind.FREE),
        ("src/inspect.py", PinKind.FREE),
        ("inspect.txt", PinKind.FREE),
    ],
)
def test_each_path_is_pinned_as_its_kind(path: str, kind: PinKind) -> None:
    """Test files, runner files, mixed files, top-level modules standing in for the standard
    library's and the code under test are told apart by path."""
    assert pin_kind(path, (), frozenset()) is kind


def test_a_named_file_and_a_configured_test_path_are_pinned() -> None:
    """What the command names is the base's, whatever it is; ``test_paths`` adds test files."""
    assert pin_kind("ci-hooks/no-secrets.sh", (), frozenset({"ci-hooks/no-secrets.sh"})) is (
        PinKind.NAMED
    )
    assert pin_kind("spec/calc_spec.rb", ("spec/**",), frozenset()) is PinKind.TEST


def test_named_files_are_the_arguments_that_are_files_at_the_base() -> None:
    """Options, inline code, absolute paths and paths out of the workspace name nothing."""
    base = {"ci-hooks/no-secrets.sh", "tests/test_calc.py"}
    argvs = [
        ("sh", "./ci-hooks/no-secrets.sh"),
        ("python", "-c", "print(1)", "--rootdir=.", "/etc/passwd", "../x", "tests/test_calc.py"),
    ]
    assert named_files(argvs, base.__contains__) == frozenset(base)


def test_an_added_tox_ini_loses_its_pytest_section_and_keeps_the_rest() -> None:
    agent = "[tox]\nenvlist = py\n\n[pytest]\npython_files = test_misc.py\n"
    assert splice("tox.ini", None, agent) == "[tox]\nenvlist = py\n\n"


def test_setup_cfg_gets_the_base_pytest_section_back() -> None:
    base = "[metadata]\nname = a\n[tool:pytest]\naddopts = -q\n"
    agent = "[metadata]\nname = b\n[tool:pytest]\naddopts = --deselect tests/x.py\n[flake8]\n"
    spliced = splice("setup.cfg", base, agent)
    assert spliced == "[metadata]\nname = b\n[flake8]\n\n[tool:pytest]\naddopts = -q\n"


def test_pyproject_keeps_the_agent_dependencies_and_the_base_pytest_options() -> None:
    base = '[project]\nname = "a"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    agent = (
        '[project]\nname = "a"\ndependencies = ["attrs"]\n\n'
        '[tool.pytest.ini_options]\naddopts = "-p support.plug"\n'
    )
    spliced = splice("pyproject.toml", base, agent)
    assert spliced is not None
    parsed = tomllib.loads(spliced)
    assert parsed["project"]["dependencies"] == ["attrs"]
    assert parsed["tool"]["pytest"] == {"ini_options": {"addopts": "-q"}}


def test_pytest_settings_hidden_in_a_dotted_key_pin_the_whole_file() -> None:
    """A ``[tool]`` table with ``pytest.ini_options.addopts`` hides from the headers: the
    splice refuses, and the whole file is the base's."""
    agent = '[tool]\npytest.ini_options.addopts = "-p support.plug"\n'
    assert splice("pyproject.toml", None, agent) is None


def test_package_json_scripts_are_the_base() -> None:
    base = json.dumps({"name": "a", "scripts": {"test": "node t.js"}})
    agent = json.dumps({"name": "a", "dependencies": {"x": "1"}, "scripts": {"test": "exit 0"}})
    spliced = splice("package.json", base, agent)
    assert spliced is not None
    assert json.loads(spliced) == {
        "name": "a",
        "dependencies": {"x": "1"},
        "scripts": {"test": "node t.js"},
    }


def test_an_unchanged_runner_part_leaves_the_agent_file_as_it_is() -> None:
    base = '{"name": "a", "scripts": {"test": "node t.js"}}'
    agent = '{"name": "b",\n "scripts": {"test": "node t.js"}}'
    assert splice("package.json", base, agent) == agent
    assert splice("tox.ini", "[pytest]\nx = 1\n", "[tox]\n[pytest]\nx = 1\n") == (
        "[tox]\n[pytest]\nx = 1\n"
    )


_LINES = st.lists(
    st.sampled_from(
        ["[pytest]", "[tool:pytest]", "[tox]", "[flake8]", "  [pytest]", "addopts = -x", "a = 1"]
    ),
    max_size=8,
).map(lambda lines: "".join(f"{line}\n" for line in lines))


@given(base=_LINES, agent=_LINES)
def test_the_spliced_ini_has_exactly_the_base_runner_sections(base: str, agent: str) -> None:
    """Whatever the agent wrote, splicing twice changes nothing more, and the result's runner
    sections are the base's."""
    once = splice("tox.ini", base, agent)
    assert once is not None
    assert splice("tox.ini", base, once) == once
    assert splice("tox.ini", base, base) == base
