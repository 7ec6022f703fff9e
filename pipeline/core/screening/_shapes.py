"""Shapes of gaming that pinning the tests cannot see (pure): code under test looking for the
test runner, a forced exit hooked in code the tests import, tautologies in new tests, and
names the tests import rebound in test code.

Each finder reads one text's lines through :func:`._lines.lines` (bounded) and does work
linear in a line's length: the patterns have no nested or adjacent ambiguous repetition, and
the same-expression checks split strings rather than backtrack.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterator
from typing import Final

from pipeline.core.screening._languages import SYNTAX
from pipeline.core.screening._lines import is_binary, lines, strip_comment
from pipeline.core.screening._model import DETAIL_CHARS, Language, Marker

__all__ = ["find_exit_hooks", "find_rebindings", "find_runner_checks", "find_same_or_true"]


def _all(*patterns: str) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(p) for p in patterns)


_RUNNER_CHECKS: Final = {
    Language.PYTHON: _all(
        r"[\"'](?:_?pytest|unittest|nose2?)[\"']\s+(?:not\s+)?in\s+sys\.(?:modules|argv)\b",
        r"\bsys\.modules\s*(?:\.get\s*\(|\[)\s*[\"']_?pytest\b",
        r"\bPYTEST_(?:CURRENT_TEST|VERSION|XDIST_WORKER)\b",
        r"\b(?:JEST_WORKER_ID|VITEST)\b",
        r"\bNODE_ENV\b[\"'\])]{0,3}\s*[!=]=\s*[\"']test[\"']",
    ),
    Language.JAVASCRIPT: _all(
        r"\bJEST_WORKER_ID\b",
        r"\bVITEST(?:_WORKER_ID|_POOL_ID)?\b",
        r"\b__vitest_worker__\b",
        r"\btypeof\s+(?:jest|vi|describe)\s*!==?\s*[\"'`]undefined[\"'`]",
        r"\bNODE_ENV\b[\"'`\])]{0,3}\s*[!=]==?\s*[\"'`]test[\"'`]",
        r"[\"'`]test[\"'`]\s*[!=]==?\s*(?:process\.env\.|import\.meta\.env\.)NODE_ENV\b",
        r"\bimport\.meta\.env\.MODE\s*[!=]==?\s*[\"'`]test[\"'`]",
    ),
    Language.GO: _all(
        r"\btesting\.Testing\s*\(\s*\)",
        r"\bflag\.Lookup\s*\(\s*\"test\.\w+\"\s*\)",
    ),
    Language.RUST: _all(r"\bcfg!\s*\(\s*test\s*\)"),
}
"""Per language, code that asks whether a test runner is running it."""

_EXIT_HOOKS: Final = _all(
    r"\bos\._exit\s*\(",
    r"\batexit\.register\s*\(\s*(?:os\._exit|_exit|sys\.exit|exit|quit)\b",
)
"""In Python code the tests import: a hard exit, or one registered to run at exit (a test
session that ends there ends with the status the code chose)."""

_OR_TRUE: Final = {
    Language.PYTHON: (re.compile(r"\bor\s+True\b"), re.compile(r"\bTrue\s+or\b")),
    Language.JAVASCRIPT: (re.compile(r"\|\|\s*true\b"), re.compile(r"\btrue\s*\|\|")),
    Language.RUST: (re.compile(r"\|\|\s*true\b"), re.compile(r"\btrue\s*\|\|")),
}
"""An ``or`` with a constant truth: the whole condition is true whatever the code does."""

_ASSERTION_LINE: Final = {
    Language.PYTHON: re.compile(r"^\s*assert\b|\bself\.assert\w*\s*\("),
    Language.JAVASCRIPT: re.compile(r"(?<![\w.$])(?:expect|assert)\s*[.(]"),
    Language.RUST: re.compile(r"\b(?:debug_)?assert\w*!"),
}

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


def _code(
    language: Language, text: str, needles: tuple[str, ...] = ("",)
) -> Iterator[tuple[int, str]]:
    """The lines holding one of ``needles``, their comments cut off (the costly part)."""
    comment = SYNTAX[language].comment
    for number, line in lines(text):
        if any(needle in line for needle in needles):
            yield number, strip_comment(line, comment)


def _marker(number: int, line: str) -> Marker:
    return Marker(line=number, text=line.strip()[:DETAIL_CHARS])


def _found(
    language: Language,
    text: str,
    patterns: tuple[re.Pattern[str], ...],
    needles: tuple[str, ...] = ("",),
) -> tuple[Marker, ...]:
    found = []
    for number, line in _code(language, text, needles):
        count = sum(len(p.findall(line)) for p in patterns)
        if count:
            found.append(Marker(line=number, text=line.strip()[:DETAIL_CHARS], count=count))
    return tuple(found)


def find_runner_checks(language: Language, text: str) -> tuple[Marker, ...]:
    """The lines asking whether a test runner runs the code (``"pytest" in sys.modules``,
    ``process.env.JEST_WORKER_ID``, ``NODE_ENV === 'test'``, ``testing.Testing()``)."""
    patterns = _RUNNER_CHECKS.get(language)
    if patterns is None or is_binary(text):
        return ()
    return _found(language, text, patterns)


def find_exit_hooks(language: Language, text: str) -> tuple[Marker, ...]:
    """The lines of Python code that exit hard (``os._exit(``) or register an exit
    (``atexit.register(os._exit, 0)``)."""
    if language is not Language.PYTHON or is_binary(text):
        return ()
    return _found(language, text, _EXIT_HOOKS, ("exit",))


def _same(left: str, right: str) -> bool:
    a, b = "".join(left.split()), "".join(right.split())
    return bool(a) and a == b


_OPEN: Final = "([{"
_CLOSE: Final = ")]}"


def _top_level(text: str) -> list[str]:
    """``text`` split at its commas outside brackets and quotes (one pass)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"`":
            quote = c
        elif c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
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


def find_same_or_true(language: Language, text: str) -> tuple[Marker, ...]:
    """The assertion lines true whatever the code does, beyond the constant ones:
    ``... or True``, ``True or ...``, ``|| true``, and one expression compared with itself
    (``assert x == x``, ``expect(f()).toBe(f())``, ``assert_eq!(x, x)``)."""
    assertion = _ASSERTION_LINE.get(language)
    if assertion is None or is_binary(text):
        return ()
    or_true = _OR_TRUE[language]
    same = _SAME[language]
    found = []
    for number, line in _code(language, text, ("assert", "expect")):
        if not assertion.search(line):
            continue
        if any(p.search(line) for p in or_true) or same(line):
            found.append(_marker(number, line))
    return tuple(found)


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
    if is_binary(text) or "import" not in text:
        return ()
    numbered = list(_code(Language.PYTHON, text))
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
            found.append(_marker(number, line))
            continue
        rebound = _SETATTR.match(line)
        if rebound is not None and rebound["name"] in imported:
            found.append(_marker(number, line))
    return tuple(found)
