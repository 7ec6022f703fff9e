"""Markers added to a change: skips, tautologies, forced exits, filters, runner checks,
rebound names, TODOs; and the finders that read them in one text (pure).

A detector finds marker lines in every old and every new image it reads. It hits only when
the new images hold more markers than the old ones, so a marker moved within a file or to
another changes nothing; it then names the new lines whose text has more copies than before,
those in files where that text grew first.

Every finder reads one text's lines through :func:`._lines.code` (bounded, line comments cut
off, except for TODOs, whose markers live in comments) and does work linear in a line's
length: the patterns have no nested or adjacent ambiguous repetition, and the
same-expression checks split strings rather than backtrack. Some of these shapes (code under
test looking for the runner, a hard exit in code the tests import, a tautology in a new test)
are what pinning the tests cannot see; the others are changes that would land in the
person's tests, which a person needs to see whatever the gate ran.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Final

from pipeline.core.screening._classify import Image, Pair, runner_sections
from pipeline.core.screening._languages import SYNTAX, compiled
from pipeline.core.screening._lines import (
    code,
    is_binary,
    lines,
    marker,
    markers,
    strip_comment,
    unquoted,
)
from pipeline.core.screening._model import Language, Marker, ScreenHit, ScreenKind
from pipeline.events.values import Count

__all__ = [
    "added_markers",
    "config_filters",
    "exits",
    "find_skips",
    "find_todos",
    "rebindings",
    "runner_checks",
    "skips",
    "tautologies",
]

Finder = Callable[[Image], tuple[Marker, ...]]
"""Reads one image's marker lines (empty when the detector does not read that image)."""


_RUNNER_CHECKS: Final = {
    Language.PYTHON: compiled(
        r"[\"'](?:_?pytest|unittest|nose2?)[\"']\s+(?:not\s+)?in\s+sys\.(?:modules|argv)\b",
        r"\bsys\.modules\s*(?:\.get\s*\(|\[)\s*[\"']_?pytest\b",
        r"\bPYTEST_(?:CURRENT_TEST|VERSION|XDIST_WORKER)\b",
        r"\b(?:JEST_WORKER_ID|VITEST)\b",
        r"\bNODE_ENV\b[\"'\])]{0,3}\s*[!=]=\s*[\"']test[\"']",
    ),
    Language.JAVASCRIPT: compiled(
        r"\bJEST_WORKER_ID\b",
        r"\bVITEST(?:_WORKER_ID|_POOL_ID)?\b",
        r"\b__vitest_worker__\b",
        r"\btypeof\s+(?:jest|vi|describe)\s*!==?\s*[\"'`]undefined[\"'`]",
        r"\bNODE_ENV\b[\"'`\])]{0,3}\s*[!=]==?\s*[\"'`]test[\"'`]",
        r"[\"'`]test[\"'`]\s*[!=]==?\s*(?:process\.env\.|import\.meta\.env\.)NODE_ENV\b",
        r"\bimport\.meta\.env\.MODE\s*[!=]==?\s*[\"'`]test[\"'`]",
    ),
    Language.GO: compiled(
        r"\btesting\.Testing\s*\(\s*\)",
        r"\bflag\.Lookup\s*\(\s*\"test\.\w+\"\s*\)",
    ),
    Language.RUST: compiled(r"\bcfg!\s*\(\s*test\s*\)"),
}
"""Per language, code that asks whether a test runner is running it."""

_OR_TRUE: Final = {
    Language.PYTHON: (re.compile(r"\bor\s+True\b"), re.compile(r"\bTrue\s+or\b")),
    Language.JAVASCRIPT: (re.compile(r"\|\|\s*true\b"), re.compile(r"\btrue\s*\|\|")),
    Language.RUST: (re.compile(r"\|\|\s*true\b"), re.compile(r"\btrue\s*\|\|")),
}
"""An ``or`` with a constant truth: the whole condition is true whatever the code does."""

_PY_ASSERT: Final = re.compile(r"^\s*assert\s+")
_PY_PAIR: Final = re.compile(r"\bself\.assert(?:Equal|Is|GreaterEqual|LessEqual)\s*\(")
_JS_EXPECT: Final = re.compile(r"(?<![\w.$])expect\s*\(")
_JS_MATCHER: Final = re.compile(r"\)\s*\.\s*(?:toBe|toEqual|toStrictEqual)\s*\(")
_JS_PAIR: Final = re.compile(r"(?<![\w.$])assert\.(?:strict)?(?:[Ee]qual|deepEqual)\s*\(")
_RUST_PAIR: Final = re.compile(r"\bassert_eq!\s*\(")

# Module-level Python: the names an import binds, and what a statement rebinds.
_IMPORT: Final = re.compile(r"^import\s(?P<names>.*)$")
_IMPORT_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_., \t")
_FROM: Final = re.compile(r"^from\s+(?P<module>[\w.]+)\s+import\s+(?P<names>.+)$")
_ASSIGNED: Final = re.compile(r"^(?P<name>[A-Za-z_]\w*)(?P<attrs>(?:\.\w+)*)\s*(?::[^=]*)?=(?!=)")
_SETATTR: Final = re.compile(r"^setattr\s*\(\s*(?P<name>[A-Za-z_]\w*)\s*,")

_FILTERS: Final = compiled(
    r"--deselect\b",
    r"--ignore(?:-glob)?\b",
    r"(?:^|[\s\"'=\[,])-k(?:[\s=\"']|$)",
    r"\btestPathIgnorePatterns\b",
    r"\bexclude\b",
    # mocha's own key for the files it leaves out (.mocharc.yml, .json, .js)
    r"(?:^|[\s{,])[\"']?ignore[\"']?\s*:",
    r"^\s*(?:async\s+)?def\s+pytest_(?:collection_modifyitems|sessionfinish|runtest_\w+)\b",
    r"^\s*collect_ignore(?:_glob)?\b",
    # a plugin loaded by the configuration can rewrite any result (``-p no:NAME`` only
    # turns one off)
    r"(?:^|[\s\"'=\[,])-p(?:\s+|=)?(?!no:)[A-Za-z_]",
    # which files, classes and functions are tests, and where they are looked for
    r"^\s*(?:python_files|python_classes|python_functions|testpaths|norecursedirs|pytest_plugins)\s*=",
)
"""Lines of a runner's configuration that deselect, ignore or filter tests."""

_EXIT_FORCED: Final = compiled(
    r"\bsession\.exitstatus\s*=(?!=)",
    r"\bos\._exit\s*\(",
    r"\bsys\.exit\s*\(\s*0?\s*\)",
    r"\bprocess\.exit\s*\(\s*0?\s*\)",
    r"\bos\.Exit\s*\(\s*0\s*\)",
)
"""Ways to end a test run as passed, in test code or test configuration of any language."""

_OS_EXIT: Final = _EXIT_FORCED[1]
_AT_EXIT: Final = re.compile(r"\batexit\.register\s*\(\s*(?:os\._exit|_exit|sys\.exit|exit|quit)\b")
"""In Python code the tests import: a hard exit (``os._exit(``), or one registered to run at
exit (a test session that ends there ends with the status the code chose)."""


def _key(marker: Marker) -> str:
    return " ".join(marker.text.split())


def _weights(found: Iterable[Marker]) -> Counter[str]:
    weights: Counter[str] = Counter()
    for m in found:
        weights[_key(m)] += m.count
    return weights


def added_markers(kind: ScreenKind, pairs: tuple[Pair, ...], find: Finder) -> list[ScreenHit]:
    """Hits of ``kind`` for the marker lines the new images add, as a net count."""
    old = [find(p.old) if p.old is not None else () for p in pairs]
    new = [find(p.new) if p.new is not None else () for p in pairs]
    if sum(m.count for ms in new for m in ms) <= sum(m.count for ms in old for m in ms):
        return []
    old_weight = _weights(m for ms in old for m in ms)
    new_weight = _weights(m for ms in new for m in ms)
    # Per text, its new lines: those in a file where the text grew come first.
    candidates: dict[str, list[tuple[bool, str, Marker]]] = {}
    for index, found in enumerate(new):
        before, now = _weights(old[index]), _weights(found)
        for m in found:
            key = _key(m)
            stayed = now[key] <= before[key]
            candidates.setdefault(key, []).append((stayed, pairs[index].change.path, m))
    hits = []
    for key, lines_of_key in candidates.items():
        excess = new_weight[key] - old_weight[key]
        for _, path, m in sorted(lines_of_key, key=lambda c: (c[0], c[1], c[2].line)):
            if excess <= 0:
                break
            hits.append(ScreenHit(kind=kind, path=path, line=Count(m.line), detail=m.text))
            excess -= m.count
    return hits


def find_skips(language: Language, text: str) -> tuple[Marker, ...]:
    """The lines holding skip or focus markers (``@pytest.mark.skip``, ``it.only``...)."""
    return markers(code(language, text), SYNTAX[language].skips)


def find_todos(text: str, words: tuple[str, ...]) -> tuple[Marker, ...]:
    """The lines holding one of ``words`` as a word (``TODO``, ``FIXME``), comments included."""
    if not any(words) or is_binary(text):
        return ()
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(m)}(?!\w)" for m in words if m))
    return markers(lines(text), (pattern,))


def skips(image: Image) -> tuple[Marker, ...]:
    """Skip and focus markers of a test image."""
    if not image.test_code or image.language is None:
        return ()
    return find_skips(image.language, image.text)


def _same(left: str, right: str) -> bool:
    a, b = "".join(left.split()), "".join(right.split())
    return bool(a) and a == b


_OPEN: Final = "([{"
_CLOSE: Final = ")]}"


def _top_level(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and quotes (one pass)."""
    parts, depth, start = [], 0, 0
    for i in unquoted(text):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _two_arguments_same(rest: str) -> bool:
    """Whether a call's text after its ``(`` passes one expression twice (``x, x)``)."""
    inner = rest.strip().removesuffix(";").rstrip()
    inner = inner[:-1] if inner.endswith(")") else inner
    parts = _top_level(inner)
    return len(parts) in (2, 3) and _same(parts[0], parts[1])


def _python_same(line: str) -> bool:
    start = _PY_ASSERT.match(line)
    if start is not None:
        expression = _top_level(line[start.end() :])[0]
        for operator in ("==", " is ", ">=", "<="):
            parts = expression.split(operator)
            if len(parts) == 2 and _same(parts[0], parts[1]):
                return True
        return False
    pair = _PY_PAIR.search(line)
    return pair is not None and _two_arguments_same(line[pair.end() :])


def _javascript_same(line: str) -> bool:
    expect = _JS_EXPECT.search(line)
    if expect is not None:
        rest = line[expect.end() :]
        matcher = _JS_MATCHER.search(rest)
        if matcher is not None:
            expected = rest[matcher.end() :].strip().removesuffix(";").rstrip()
            expected = expected[:-1] if expected.endswith(")") else expected
            return _same(rest[: matcher.start()], expected)
        return False
    pair = _JS_PAIR.search(line)
    return pair is not None and _two_arguments_same(line[pair.end() :])


def _rust_same(line: str) -> bool:
    pair = _RUST_PAIR.search(line)
    return pair is not None and _two_arguments_same(line[pair.end() :])


_SAME: Final = {
    Language.PYTHON: _python_same,
    Language.JAVASCRIPT: _javascript_same,
    Language.RUST: _rust_same,
}


def tautologies(image: Image) -> tuple[Marker, ...]:
    """Assertions true whatever the code does in a test image: a constant truth
    (``assert True``, ``expect(true).toBe(true)``), ``... or True``, ``True or ...``,
    ``|| true``, and one expression compared with itself (``assert x == x``,
    ``expect(f()).toBe(f())``, ``assert_eq!(x, x)``)."""
    language = image.language
    if not image.test_code or language is None:
        return ()
    syntax = SYNTAX[language]
    found = []
    for number, line in code(language, image.text):
        count = sum(len(p.findall(line)) for p in syntax.tautologies)
        if count:
            found.append(marker(number, line, count))
        elif (
            language in _SAME
            and any(p.search(line) for p in syntax.assertions)
            and (any(p.search(line) for p in _OR_TRUE[language]) or _SAME[language](line))
        ):
            found.append(marker(number, line))
    return tuple(found)


def exits(image: Image) -> tuple[Marker, ...]:
    """Forced exits in test code or a test runner's configuration, and hard or registered
    exits (``os._exit(``, ``atexit.register(os._exit, 0)``) in any Python code: the tests
    import code, and a session that ends there ends with the status it chose."""
    python = image.language is Language.PYTHON
    if image.test_code or image.runner_config:
        patterns = (*_EXIT_FORCED, _AT_EXIT) if python else _EXIT_FORCED
        return markers(code(image.language, image.text), patterns)
    if not python:
        return ()
    return markers(code(image.language, image.text, ("exit",)), (_OS_EXIT, _AT_EXIT))


def runner_checks(image: Image) -> tuple[Marker, ...]:
    """Code under test asking whether a test runner runs it (``"pytest" in sys.modules``,
    ``process.env.JEST_WORKER_ID``, ``NODE_ENV === 'test'``, ``testing.Testing()``).

    Test code and runner configuration are left out (a conftest may well ask), except in
    Rust, whose tests live in the files of the code."""
    if image.language is None or image.runner_config:
        return ()
    if image.test_code and image.language is not Language.RUST:
        return ()
    patterns = _RUNNER_CHECKS.get(image.language)
    return () if patterns is None else markers(code(image.language, image.text), patterns)


def rebindings(image: Image) -> tuple[Marker, ...]:
    """Module-level rebinding of an imported name in a Python test file or conftest."""
    if image.language is not Language.PYTHON:
        return ()
    if not (image.test_code or image.path.rsplit("/", 1)[-1] == "conftest.py"):
        return ()
    return find_rebindings(image.text)


def config_filters(image: Image) -> tuple[Marker, ...]:
    """Lines of a runner's configuration that deselect, ignore or filter tests."""
    if not image.runner_config:
        return ()
    comment = "//" if ".config." in image.path or ".mocharc" in image.path else "#"
    numbered = runner_sections(image.path, image.text)
    return markers(((n, strip_comment(line, comment)) for n, line in numbered), _FILTERS)


def _bound_by_imports(numbered: list[tuple[int, str]]) -> tuple[set[str], set[str]]:
    """The names module-level imports bind: (modules, names from modules)."""
    modules: set[str] = set()
    names: set[str] = set()
    index = 0
    while index < len(numbered):
        line = numbered[index][1].rstrip()
        index += 1
        plain = _IMPORT.match(line)
        if plain is not None and set(plain["names"]) <= _IMPORT_CHARS:
            for part in plain["names"].split(","):
                words = part.split()
                if len(words) == 3 and words[1] == "as":
                    modules.add(words[2])
                elif words:
                    modules.add(words[0].split(".")[0])
            continue
        origin = _FROM.match(line)
        if origin is None or origin["module"] == "__future__":
            continue
        listed = origin["names"]
        if listed.lstrip().startswith("(") and ")" not in listed:
            # A parenthesised list over several lines, up to its ``)``.
            while index < len(numbered):
                following = numbered[index][1]
                index += 1
                listed += " " + following
                if ")" in following:
                    break
        for part in listed.strip().strip("()").split(","):
            words = part.replace(")", " ").replace("(", " ").replace("\\", " ").split()
            if len(words) == 3 and words[1] == "as":
                names.add(words[2])
            elif len(words) == 1 and words[0] != "*":
                names.add(words[0])
    return modules, names


def find_rebindings(text: str) -> tuple[Marker, ...]:
    """The module-level lines of a Python test file that rebind a name it imports:
    ``add = lambda a, b: a + b`` after ``from calc import add``, ``calc.add = ...`` or
    ``setattr(calc, "add", ...)`` after ``import calc``."""
    if "import" not in text:
        return ()
    numbered = list(code(Language.PYTHON, text))
    modules, names = _bound_by_imports(numbered)
    imported = modules | names
    if not imported:
        return ()
    found = []
    for number, line in numbered:
        if not line or line[0].isspace():
            continue  # not at module level
        assigned = _ASSIGNED.match(line)
        if assigned is not None and assigned["name"] in imported:
            found.append(marker(number, line))
            continue
        rebound = _SETATTR.match(line)
        if rebound is not None and rebound["name"] in imported:
            found.append(marker(number, line))
    return tuple(found)
