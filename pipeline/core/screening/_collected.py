"""Lost tests counted by collection: the test ids a gate's runner collects on the base and on
the agent's tree, compared (pure).

A handler runs the collection (pytest through ralph's small plugin, jest through its small
reporter, ``vitest list``, ``go test -list``, ``cargo test -- --list``, or a gate's own
``collect`` command) and hands the output here. A test is known by its id less its file
(``tests/test_calc.py::TestCalc::test_add`` is ``TestCalc::test_add``), so a test moved to
another file the runner collects is the same test; a base test that runs no more (not
collected, or collected skipped or expected to fail) is lost, whatever file it moved to.
"""

from __future__ import annotations

import enum
import json
import posixpath
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final, assert_never, final

from attrs import frozen

from pipeline.core.screening._classify import matches_any
from pipeline.core.screening._lines import MAX_LINE_CHARS, lines, listed, plural
from pipeline.core.screening._model import ScreenHit, ScreenKind, file_hit

__all__ = [
    "PYTEST_PLUGIN",
    "Collected",
    "CollectedTest",
    "Runner",
    "collection_steps",
    "lost_by_collection",
    "npm_test_args",
    "package_test_command",
    "parse_cargo",
    "parse_go",
    "parse_listed",
    "parse_pytest",
    "parse_vitest",
    "runner_of",
]

_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "cmd", "powershell"})
_PYTEST: Final = frozenset({"pytest", "py.test", "pytest.exe"})
_LAUNCHERS: Final = frozenset({"npx", "bunx", "node", "yarn"})
"""Programs that run the program named by their first argument that is not an option."""
_EXEC: Final = frozenset({"pnpm", "bun"})
"""Programs that do so after ``exec`` (``pnpm exec jest``)."""
_JEST: Final = frozenset({"jest", "jest.js"})
_VITEST: Final = frozenset({"vitest", "vitest.mjs"})
_NPM_TEST: Final = frozenset({("test",), ("t",), ("tst",), ("run", "test"), ("run-script", "test")})
"""What ``npm`` is asked to run the ``test`` script of ``package.json`` with."""
_SHELL_SYNTAX: Final = frozenset(";&|<>$`(){}[]*?!~#\\\"'\n")
"""Characters that make a script line more than one plain command."""
_VITEST_MODES: Final = frozenset({"run", "watch", "dev", "related"})
_VITEST_DROPPED: Final = frozenset({"--run", "--watch", "--coverage", "--coverage.enabled"})
NO_TEST_NAME: Final = "(?!)"
"""A JavaScript pattern no test name matches: jest loads every test file and runs no test."""
_GO_TEST: Final = re.compile(r"(?:Test|Fuzz|Example)\w*")
"""The names ``go test -list`` prints that ``go test`` runs (benchmarks only with ``-bench``)."""
_CARGO_LISTED: Final = re.compile(r"(?P<name>.+): (?:test|bench)")
_CARGO_RUNNING: Final = re.compile(r"Running (?:unittests )?(?P<file>\S+)(?: \(.*\))?")
_CARGO_DOCTESTS: Final = re.compile(r"Doc-tests (?P<crate>\S+)")
_DOC_LINE: Final = re.compile(r" \(line \d+\)$")
"""The line a doc test starts at, which any edit above it moves: not part of its identity."""


PYTEST_PLUGIN: Final = "ralph_collect"
"""The module name of ralph's collection plugin (``-p ralph_collect``)."""


@enum.unique
class Runner(enum.StrEnum):
    """How a gate's tests are collected."""

    PYTEST = "pytest"
    """ralph's plugin, added to the gate's own pytest command."""
    JEST = "jest"
    """ralph's reporter, given to the gate's own jest command, which runs no test."""
    VITEST = "vitest"
    """``vitest list --json`` made of the gate's own vitest command."""
    GO = "go"
    """``go test -list .* -json`` made of the gate's own ``go test`` command."""
    CARGO = "cargo"
    """The gate's own ``cargo test`` with ``-- --list --format terse``, then ``--ignored``."""
    COMMAND = "command"
    """The gate's ``collect`` command: one test id per line of its output."""


@final
@frozen(kw_only=True)
class CollectedTest:
    """One collected test: its id and why it will not run (None: it runs)."""

    __test__ = False  # a value, not a test class (pytest collects Test* names)

    id: str
    skipped: str | None = None
    """``skip`` or ``xfail`` (a marker pytest applies at collection), ``ignore`` (Rust's
    ``#[ignore]``), else None."""


@final
@frozen(kw_only=True)
class Collected:
    """A collection's outcome: its tests, or why there are none to trust (``failure``)."""

    tests: tuple[CollectedTest, ...] = ()
    failure: str | None = None


def _program_at(argv: Sequence[str]) -> int | None:
    """Where the program a JavaScript launcher runs is in ``argv`` (``npx jest``, ``node
    node_modules/.bin/jest``, ``pnpm exec vitest``); 0 when ``argv[0]`` is no launcher."""
    first = posixpath.basename(argv[0])
    start = 1
    if first in _EXEC:
        if len(argv) < 2 or argv[1] != "exec":
            return None
        start = 2
    elif first not in _LAUNCHERS:
        return 0
    for index in range(start, len(argv)):
        if not argv[index].startswith("-"):
            return index
    return None


def runner_of(argv: Sequence[str]) -> Runner | None:
    """Which known test runner a gate's command runs itself: pytest (``pytest ...``,
    ``python -m pytest ...``, ``uv run pytest ...``), jest or vitest (the program, or through
    ``npx``, ``node``, ``yarn``, ``pnpm exec``), ``go test``, ``cargo test``. A shell command
    line, ``npm test`` and ``make`` are never read here: what they run is not known from the
    argv (an ``npm test`` gate's script: :func:`package_test_command`)."""
    if not argv or posixpath.basename(argv[0]) in _SHELLS:
        return None
    for index, arg in enumerate(argv):
        if posixpath.basename(arg) in _PYTEST:
            return Runner.PYTEST
        if arg == "-m" and index + 1 < len(argv) and argv[index + 1] == "pytest":
            return Runner.PYTEST
    first = posixpath.basename(argv[0])
    if first == "go":
        return Runner.GO if len(argv) > 1 and argv[1] == "test" else None
    if first == "cargo":
        rest = [a for a in argv[1:] if not a.startswith("+")]  # +toolchain
        return Runner.CARGO if rest[:1] == ["test"] else None
    at = _program_at(argv)
    program = None if at is None else posixpath.basename(argv[at])
    if program in _JEST:
        return Runner.JEST
    if program in _VITEST:
        return Runner.VITEST
    return None


def npm_test_args(argv: Sequence[str]) -> tuple[str, ...] | None:
    """When ``argv`` runs ``package.json``'s ``test`` script (``npm test``, ``npm t``, ``npm
    run test``, with npm's own options), the arguments it passes on to the script (after
    ``--``); else None."""
    if not argv or posixpath.basename(argv[0]) != "npm":
        return None
    split = argv.index("--") if "--" in argv else len(argv)
    words = tuple(a for a in argv[1:split] if not a.startswith("-"))
    return tuple(argv[split + 1 :]) if words in _NPM_TEST else None


def package_test_command(script: str, args: Sequence[str] = ()) -> tuple[str, ...] | None:
    """The command that collects like ``npm test`` when its ``script`` is one plain jest or
    vitest command (no quotes, variables, globs, operators, nor a leading assignment): the
    runner from the project's ``node_modules`` (``npx --no``, never a download), the
    script's words and ``args``; else None, as the runner is not known for sure."""
    words = script.split()
    if not words or any(c in _SHELL_SYNTAX for c in script) or "=" in words[0]:
        return None
    if runner_of(words) not in (Runner.JEST, Runner.VITEST):
        return None
    direct = _program_at(words) == 0
    return (*(("npx", "--no", "--") if direct else ()), *words, *args)


def _vitest_list(argv: Sequence[str]) -> tuple[str, ...]:
    at = _program_at(argv) or 0
    rest = [a for a in argv[at + 1 :] if a.split("=", 1)[0] not in _VITEST_DROPPED]
    if rest[:1] and rest[0] in _VITEST_MODES:
        rest = rest[1:]
    return (*argv[: at + 1], "list", *rest, "--json")


def _cargo_list(argv: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    split = argv.index("--") if "--" in argv else len(argv)
    cargo, binary = tuple(argv[:split]), tuple(argv[split + 1 :])
    listed = (*cargo, "--", *binary, "--list", "--format", "terse")
    if {"--ignored", "--include-ignored"} & set(binary):
        return (listed,)  # the gate runs its ignored tests: none is kept from running
    return (listed, (*listed, "--ignored"))


def collection_steps(
    runner: Runner, argv: Sequence[str], reporter: str = ""
) -> tuple[tuple[str, ...], ...]:
    """The commands that collect a gate's tests without running them, made of the gate's own
    ``argv`` (its options and paths narrow its collection as they narrow its run); ``reporter``:
    the path of ralph's jest reporter. ``COMMAND``: ``argv`` itself."""
    match runner:
        case Runner.PYTEST:
            # Collecting only, through ralph's plugin, writing no cache.
            return ((*argv, "--collect-only", "-q", "-p", PYTEST_PLUGIN, "-p", "no:cacheprovider"),)
        case Runner.JEST:
            return (
                (
                    *argv,
                    "--ci",
                    "--passWithNoTests",
                    "--coverage=false",
                    "--no-watchman",
                    f"--reporters={reporter}",
                    f"--testNamePattern={NO_TEST_NAME}",
                ),
            )
        case Runner.VITEST:
            return (_vitest_list(argv),)
        case Runner.GO:
            return ((*argv[:2], "-list", ".*", "-json", *argv[2:]),)
        case Runner.CARGO:
            return _cargo_list(argv)
        case Runner.COMMAND:
            return (tuple(argv),)
        case _:
            assert_never(runner)


def parse_pytest(output: str, token: str) -> Collected:
    """The tests ralph's plugin wrote (lines ``TOKEN {json}``, then ``TOKEN END n``); a
    failure when the end line is missing or does not count the lines."""
    tests: list[CollectedTest] = []
    prefix = f"{token} "
    for _, line in lines(output):
        if not token or not line.startswith(prefix):
            continue
        rest = line[len(prefix) :]
        if rest.startswith("END "):
            told = rest[4:].strip()
            if told != str(len(tests)):
                return Collected(failure=f"the plugin counted {told}, wrote {len(tests)}")
            return Collected(tests=tuple(tests))
        try:
            # json, not orjson: a path that is not UTF-8 comes as a lone surrogate escape,
            # which orjson refuses; the handler makes hits UTF-8 later.
            record = json.loads(rest)
        except (json.JSONDecodeError, RecursionError):
            return Collected(failure="the plugin wrote a line that is not JSON")
        test = record.get("id") if isinstance(record, dict) else None
        skipped = record.get("skip") if isinstance(record, dict) else None
        if not isinstance(test, str) or not (skipped is None or isinstance(skipped, str)):
            return Collected(failure="the plugin wrote a record without an id")
        tests.append(CollectedTest(id=test, skipped=skipped))
    return Collected(failure="the plugin's list never ended (pytest stopped before it)")


def parse_vitest(output: str, root: str) -> Collected:
    """The tests ``vitest list --json`` printed (a JSON list of ``{name, file}``, the tests
    that would run: a skipped or todo test is not listed), files made relative to ``root``;
    a failure when no such list is found."""
    found: list[str] = []
    inside: list[str] | None = None
    for _, line in lines(output):
        if line == "[]":
            found = [line]
        elif line == "[":
            inside = [line]
        elif inside is not None:
            inside.append(line)
            if line == "]":
                found, inside = inside, None
    if not found:
        return Collected(failure="vitest printed no list of tests")
    try:
        records = json.loads("\n".join(found))
    except (json.JSONDecodeError, RecursionError):
        return Collected(failure="vitest's list is not JSON")
    prefix = root.rstrip("/") + "/"
    tests: list[CollectedTest] = []
    for record in records if isinstance(records, list) else [None]:
        name = record.get("name") if isinstance(record, dict) else None
        file = record.get("file") if isinstance(record, dict) else None
        if not isinstance(name, str) or not isinstance(file, str):
            return Collected(failure="vitest listed a test without a name or a file")
        tests.append(CollectedTest(id=f"{file.removeprefix(prefix)}::{name}"))
    return Collected(tests=tuple(tests))


def parse_go(output: str) -> Collected:
    """The tests ``go test -list .* -json`` printed, as ``PACKAGE::Name`` (the package stands
    for the file: a test moved to another file or package is the same test)."""
    tests: list[CollectedTest] = []
    for _, line in lines(output):
        if not line.startswith("{"):
            continue  # go's own messages (downloads, build notes) are not events
        try:
            event = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(event, dict) or event.get("Action") != "output":
            continue
        package, text = event.get("Package"), event.get("Output")
        if isinstance(package, str) and isinstance(text, str) and _GO_TEST.fullmatch(text.strip()):
            tests.append(CollectedTest(id=f"{package}::{text.strip()}"))
    return Collected(tests=tuple(tests))


def _cargo_tests(output: str) -> list[str]:
    """``TARGET::name`` for each test ``cargo test -- --list --format terse`` listed, the
    target from cargo's ``Running`` line before it (``.`` under ``cargo test -q``)."""
    target = "."
    found: list[str] = []
    for _, raw in lines(output):
        line = raw.strip()
        if running := _CARGO_RUNNING.fullmatch(line):
            target = running["file"]
        elif doc := _CARGO_DOCTESTS.fullmatch(line):
            target = f"doc-tests {doc['crate']}"
        elif listed := _CARGO_LISTED.fullmatch(line):
            found.append(f"{target}::{_DOC_LINE.sub('', listed['name'])}")
    return found


def parse_cargo(listed: str, ignored: str | None) -> Collected:
    """The tests cargo listed, those also in ``ignored`` (the ``--ignored`` listing; None:
    not asked) marked ``ignore``: an ``#[ignore]`` keeps a test from running."""
    kept = Counter(_cargo_tests(ignored)) if ignored is not None else Counter[str]()
    tests: list[CollectedTest] = []
    for test in _cargo_tests(listed):
        if kept[test] > 0:
            kept[test] -= 1
            tests.append(CollectedTest(id=test, skipped="ignore"))
        else:
            tests.append(CollectedTest(id=test))
    return Collected(tests=tuple(tests))


def parse_listed(output: str) -> Collected:
    """The test ids a ``collect`` command printed, one a line (blank lines skipped)."""
    tests = tuple(CollectedTest(id=line.strip()) for _, line in lines(output) if line.strip())
    return Collected(tests=tests)


def _key(test_id: str) -> str:
    """A test's identity wherever its file is: the id less the file part."""
    head, sep, rest = test_id.partition("::")
    return rest if sep else head


def _file(test_id: str) -> str:
    head, sep, _ = test_id.partition("::")
    return head if sep and head else "."


def lost_by_collection(
    gate: str, base: Collected, now: Collected, allow: tuple[str, ...] = ()
) -> tuple[ScreenHit, ...]:
    """The base's running tests that do not run on the agent's tree, one hit per file and
    way (no longer collected; collected skipped), or one ``collection_failed`` hit; tests
    of files matching ``allow`` (``[tamper] allow``) never hit.

    A failed base collection compares nothing (the base is the person's: a
    ``screen_incomplete`` hit says so); a failed collection of the agent's tree is a
    ``collection_failed`` hit, never "every test lost"."""
    if base.failure is not None:
        detail = f"gate '{gate}': the base's collection failed ({base.failure}); not compared"
        return (file_hit(ScreenKind.SCREEN_INCOMPLETE, ".", detail[:MAX_LINE_CHARS]),)
    if now.failure is not None:
        detail = f"gate '{gate}': collecting the tests failed ({now.failure})"
        return (file_hit(ScreenKind.COLLECTION_FAILED, ".", detail[:MAX_LINE_CHARS]),)
    running = Counter(_key(t.id) for t in now.tests if t.skipped is None)
    skipped = {_key(t.id): t.skipped for t in now.tests if t.skipped is not None}
    lost: dict[tuple[str, str], list[str]] = {}
    for test in base.tests:
        if test.skipped is not None:
            continue  # it did not run on the base either
        key = _key(test.id)
        if running[key] > 0:
            running[key] -= 1
            continue
        how = skipped.get(key)
        way = "no longer collected" if how is None else f"collected but marked {how}"
        lost.setdefault((_file(test.id), way), []).append(test.id)
    return tuple(
        file_hit(
            ScreenKind.TEST_LOST,
            path,
            f"gate '{gate}': {plural(len(ids), 'test')} {way}: {listed(ids)}",
        )
        for (path, way), ids in sorted(lost.items())
        if not matches_any(path, allow)
    )
