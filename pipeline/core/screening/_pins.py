"""Which files decide what a gate checks, and the runner's part of a file that holds other
tools' settings too (pure).

A gate pinned to the run's base runs the agent's code against the person's checks: every
**test file** (the screen's test patterns and ``[tamper] test_paths``), every **runner file**
(``pytest.ini``, ``conftest.py``, ``__init__.py`` in a test folder, ``jest.config.*``,
``vitest.config.*``, ``.mocharc*``, a ``Makefile``) and every file the command names is taken
from the base; the **mixed files** (``tox.ini``, ``setup.cfg``, ``pyproject.toml``,
``package.json``) keep the agent's text but for the runner's sections or keys, which are the
base's (:func:`splice`); a top-level module the agent added that would **stand in** for one
the runner imports (``inspect.py``) is left out. The handler
(``pipeline.handlers.runtime._pinned``) lays the files out; nothing here reads a file.
"""

from __future__ import annotations

import enum
import json
import posixpath
import sys
import tomllib
from collections.abc import Callable, Iterable
from typing import Final

from pipeline.core.screening._classify import (
    MIXED_FILES,
    RUNNER_FILES,
    TEST_PATTERNS,
    matches_any,
    runner_header,
)

__all__ = [
    "PinKind",
    "named_files",
    "pin_kind",
    "splice",
]

_RUNNER_NAMES: Final = (
    *RUNNER_FILES,
    # Python runs these at its start wherever they are on the path: a test run's too.
    "sitecustomize.py",
    "usercustomize.py",
    "Makefile",
    "makefile",
    "GNUmakefile",
)

_SHADOWS: Final = frozenset({"pytest", "_pytest", "pluggy", "unittest"})
"""Modules a test run imports from the path, where ``python -m pytest`` puts the work tree
first: a ``pytest.py`` or ``pytest/`` of the agent's would stand in for the runner."""

_RUNNER_IMPORTS: Final = frozenset({"iniconfig", "packaging", "exceptiongroup", "tomli"})
"""What pytest imports at its start beside itself and pluggy, besides the standard library."""

_MODULE_SUFFIXES: Final = (".py", ".pyc", ".so")
"""Files Python imports a module from (``.pyc`` without its source too)."""

_PACKAGE_KEYS: Final = ("scripts", "jest", "vitest", "mocha")


@enum.unique
class PinKind(enum.Enum):
    """What a pinned gate does with one path."""

    TEST = "test"
    """A test file: the base's when the base has it; one the agent added runs only after the
    person's tests have passed."""
    RUNNER = "runner"
    """Test-runner configuration: the base's, or absent when the base has none."""
    MIXED = "mixed"
    """The agent's file with the runner's sections spliced from the base's."""
    NAMED = "named"
    """A file the gate's (or hook's) command names: the base's when the base has it."""
    STAND_IN = "stand-in"
    """A top-level module named like one of the standard library's (or one pytest imports):
    ``python -m`` puts the work tree first on the path, so one the agent added would stand in
    for what the runner imports before any test runs: absent when the base has none; the
    agent's when the base has it (the person's own module: the base's would test old code)."""
    FREE = "free"
    """The agent's, as it is."""


def pin_kind(path: str, test_paths: tuple[str, ...], named: frozenset[str]) -> PinKind:
    """What a pinned gate does with ``path`` (relative, ``/``-separated)."""
    name = path.rsplit("/", 1)[-1]
    test = matches_any(path, TEST_PATTERNS) or matches_any(path, test_paths)
    if path in named:
        return PinKind.NAMED
    top = path.split("/", 1)[0].removesuffix(".py")
    if matches_any(name, _RUNNER_NAMES) or (test and name == "__init__.py") or top in _SHADOWS:
        return PinKind.RUNNER
    if name in MIXED_FILES:
        return PinKind.MIXED
    if test:
        return PinKind.TEST  # one the agent added is out of the person's world already
    return PinKind.STAND_IN if _stands_in(path) else PinKind.FREE


def _stands_in(path: str) -> bool:
    """Whether ``path`` is a top-level module (``inspect.py``, ``inspect/__init__.py``,
    ``inspect.cpython-311-x86_64-linux-gnu.so``) named like one of the standard library's or
    one pytest imports. A folder without ``__init__`` is not one: a namespace package comes
    after every module of its name on the path."""
    parts = path.split("/")
    if len(parts) == 2 and parts[1].startswith("__init__."):
        module, file = parts
    elif len(parts) == 1:
        module, file = parts[0].split(".", 1)[0], parts[0]
    else:
        return False
    if "." not in file or not file.endswith(_MODULE_SUFFIXES):
        return False
    return module in sys.stdlib_module_names or module in _RUNNER_IMPORTS


def named_files(argvs: Iterable[tuple[str, ...]], exists: Callable[[str], bool]) -> frozenset[str]:
    """The workspace paths the commands ``argvs`` name that ``exists`` (at the base): each
    argument that reads as a relative path inside the workspace, not an option or inline
    code."""
    found: set[str] = set()
    for argv in argvs:
        for arg in argv:
            if not arg or arg.startswith(("-", "/")) or "\0" in arg or "\n" in arg:
                continue
            path = posixpath.normpath(arg)
            if path == "." or path.startswith("../") or path == "..":
                continue
            if exists(path):
                found.add(path)
    return frozenset(found)


def splice(path: str, base: str | None, agent: str) -> str | None:
    """``agent``'s text of mixed file ``path`` with the runner's part as ``base`` has it (None:
    the base has no such file, so no runner part); None when that cannot be done soundly (the
    text does not parse, or the runner's settings hide where the sections do not show them):
    then the whole file is the base's."""
    name = path.rsplit("/", 1)[-1]
    if name == "package.json":
        return _splice_json(base, agent)
    if name == "pyproject.toml":
        return _splice_toml(base, agent)
    return _splice_sections(name, base, agent)


def _splice_json(base: str | None, agent: str) -> str | None:
    try:
        mine = json.loads(agent)
        theirs = {} if base is None else json.loads(base)
    except ValueError:
        return None
    if not isinstance(mine, dict) or not isinstance(theirs, dict):
        return None
    if all(
        mine.get(key) == theirs.get(key) and (key in mine) == (key in theirs)
        for key in _PACKAGE_KEYS
    ):
        return agent
    for key in _PACKAGE_KEYS:
        mine.pop(key, None)
        if key in theirs:
            mine[key] = theirs[key]
    return json.dumps(mine, indent=2, ensure_ascii=False) + "\n"


def _sections(text: str, name: str) -> tuple[list[str], list[str]]:
    """``text``'s lines outside the runner's sections, and those inside them (headers
    included), as :func:`runner_header` reads the headers of ``name``."""
    other: list[str] = []
    inside: list[str] = []
    current = other
    for line in text.splitlines(keepends=True):
        header = runner_header(name, line)
        if header is not None:
            current = inside if header else other
        current.append(line)
    return other, inside


def _splice_sections(name: str, base: str | None, agent: str) -> str:
    """``agent``'s lines outside the runner's sections, then ``base``'s sections (none when
    ``base`` is None); ``agent`` itself when its sections are the base's already."""
    other, now = _sections(agent, name)
    inside = [] if base is None else _sections(base, name)[1]
    if now == inside:
        return agent
    text = "".join(other)
    if inside:
        if text and not text.endswith("\n"):
            text += "\n"
        text += "\n" + "".join(inside)
    return text


def _tool_pytest(text: str) -> object:
    tool = tomllib.loads(text).get("tool", {})
    return tool.get("pytest") if isinstance(tool, dict) else None


def _splice_toml(base: str | None, agent: str) -> str | None:
    spliced = _splice_sections("pyproject.toml", base, agent)
    try:
        wanted = None if base is None else _tool_pytest(base)
        # A dotted key (``pytest.ini_options.addopts`` under ``[tool]``) or an inline table
        # hides settings from the headers: then the whole file is the base's.
        if _tool_pytest(spliced) != wanted:
            return None
    except tomllib.TOMLDecodeError:
        return None
    return spliced
