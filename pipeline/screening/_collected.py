"""Lost tests counted by collection: the test ids a gate's runner collects on the base and on
the agent's tree, compared (pure).

A handler runs the collection (pytest through ralph's small plugin, or a gate's own
``collect`` command) and hands the output here. A test is known by its id less its file
(``tests/test_calc.py::TestCalc::test_add`` is ``TestCalc::test_add``), so a test moved to
another file the runner collects is the same test; a base test that runs no more (not
collected, or collected skipped or expected to fail) is lost, whatever file it moved to.
"""

from __future__ import annotations

import enum
import json
from collections import Counter
from collections.abc import Sequence
from typing import Final, final

from attrs import frozen

from pipeline.events.values import Count
from pipeline.screening._glob import matches_any
from pipeline.screening._lines import MAX_LINE_CHARS, lines
from pipeline.screening._model import ScreenHit, ScreenKind

__all__ = [
    "PYTEST_PLUGIN",
    "Collected",
    "CollectedTest",
    "Runner",
    "collection_argv",
    "lost_by_collection",
    "parse_listed",
    "parse_pytest",
    "runner_of",
]

_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "cmd", "powershell"})
_PYTEST: Final = frozenset({"pytest", "py.test", "pytest.exe"})
_IDS_SHOWN: Final = 10


def _basename(arg: str) -> str:
    return arg.rsplit("/", 1)[-1]


PYTEST_PLUGIN: Final = "ralph_collect"
"""The module name of ralph's collection plugin (``-p ralph_collect``)."""


@enum.unique
class Runner(enum.StrEnum):
    """How a gate's tests are collected."""

    PYTEST = "pytest"
    """ralph's plugin, added to the gate's own pytest command."""
    COMMAND = "command"
    """The gate's ``collect`` command: one test id per line of its output."""


@final
@frozen(kw_only=True)
class CollectedTest:
    """One collected test: its id and why it will not run (None: it runs)."""

    __test__ = False  # a value, not a test class (pytest collects Test* names)

    id: str
    skipped: str | None = None
    """``skip`` or ``xfail`` (a marker pytest applies at collection), else None."""


@final
@frozen(kw_only=True)
class Collected:
    """A collection's outcome: its tests, or why there are none to trust (``failure``)."""

    tests: tuple[CollectedTest, ...] = ()
    failure: str | None = None


def runner_of(argv: Sequence[str]) -> Runner | None:
    """Whether a gate's command runs pytest itself (``pytest ...``, ``python -m pytest
    ...``, ``uv run pytest ...``); a shell command line is never read."""
    if not argv or _basename(argv[0]) in _SHELLS:
        return None
    for index, arg in enumerate(argv):
        if _basename(arg) in _PYTEST:
            return Runner.PYTEST
        if arg == "-m" and index + 1 < len(argv) and argv[index + 1] == "pytest":
            return Runner.PYTEST
    return None


def collection_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """The gate's pytest command made to collect only, through ralph's plugin, writing no
    cache."""
    return (*argv, "--collect-only", "-q", "-p", PYTEST_PLUGIN, "-p", "no:cacheprovider")


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


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:_IDS_SHOWN])
    more = len(ids) - _IDS_SHOWN
    return f"{shown}, ... ({more} more)" if more > 0 else shown


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
        return (
            ScreenHit(
                kind=ScreenKind.SCREEN_INCOMPLETE,
                path=".",
                line=Count(0),
                detail=detail[:MAX_LINE_CHARS],
            ),
        )
    if now.failure is not None:
        detail = f"gate '{gate}': collecting the tests failed ({now.failure})"
        return (
            ScreenHit(
                kind=ScreenKind.COLLECTION_FAILED,
                path=".",
                line=Count(0),
                detail=detail[:MAX_LINE_CHARS],
            ),
        )
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
        ScreenHit(
            kind=ScreenKind.TEST_LOST,
            path=path,
            line=Count(0),
            detail=f"gate '{gate}': {_plural(len(ids))} {way}: {_listed(ids)}",
        )
        for (path, way), ids in sorted(lost.items())
        if not matches_any(path, allow)
    )


def _plural(n: int) -> str:
    return "1 test" if n == 1 else f"{n} tests"
