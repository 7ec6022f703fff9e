"""What each language's test frameworks look like: the patterns the counters use (pure data).

The table is section 8 of ``docs/research/gates-design.md``. Every pattern is matched on one
comment-stripped line at a time and has no nested repetition, so its cost is bounded by the
line's length.
"""

from __future__ import annotations

import re
from typing import Final, final

from attrs import frozen

from pipeline.core.screening._model import Language

__all__ = ["SYNTAX", "Syntax", "compiled", "language_of"]


@final
@frozen(kw_only=True)
class Syntax:
    """One language's patterns: a test's declaration, its markers and its assertions.

    ``item`` captures the test's name in group ``name``. ``attribute`` (Rust, JVM) marks a
    declaration on a later line, which ``declaration`` then names. A language finds its tests
    by ``item`` or by the other two; the ones it does not use are None.
    """

    comment: str
    skips: tuple[re.Pattern[str], ...]
    assertions: tuple[re.Pattern[str], ...]
    tautologies: tuple[re.Pattern[str], ...]
    item: re.Pattern[str] | None = None
    attribute: re.Pattern[str] | None = None
    declaration: re.Pattern[str] | None = None
    test_attribute: re.Pattern[str] | None = None
    """Makes a file test code wherever it lives (``#[cfg(test)]``, ``@Test``)."""
    breaks: str = ""
    """What ends a line for the language beside ``\\n`` (a lone CR in Python, Java and
    JavaScript; U+2028 and U+2029 in JavaScript): a statement after one is a line of its own
    there, and must be one for the detectors anchored at a line's start. Go and Rust read a CR
    as a space: none."""


def compiled(*patterns: str) -> tuple[re.Pattern[str], ...]:
    """Each pattern compiled."""
    return tuple(re.compile(p) for p in patterns)


_PYTHON: Final = Syntax(
    comment="#",
    breaks="\r",
    item=re.compile(r"^\s*(?:async\s+)?def\s+(?P<name>test\w*)\s*\("),
    skips=compiled(
        r"\b(?:pytest\.)?mark\.(?:skip|skipif|xfail)\b",
        r"\bpytest\.(?:skip|xfail|importorskip)\s*\(",
        r"@(?:unittest\.)?(?:skip|skipIf|skipUnless|expectedFailure)\b",
        r"\.skipTest\s*\(",
        r"\braise\s+(?:unittest\.)?SkipTest\b",
    ),
    assertions=compiled(
        r"^\s*assert\b",
        r"\bself\.assert\w*\s*\(",
        r"\bpytest\.raises\s*\(",
    ),
    tautologies=compiled(
        r"^\s*assert\s+(?:True|1)\s*(?:,|$)",
        r"\bassertTrue\s*\(\s*(?:True|1)\s*\)",
    ),
)

_JAVASCRIPT: Final = Syntax(
    comment="//",
    breaks="\r\u2028\u2029",
    item=re.compile(
        r"(?<![\w.$])[xf]?(?:it|test)(?:\.\w+)*\s*\(\s*"
        r"(?:(?P<q>['\"`])(?P<name>(?:\\.|(?!(?P=q))[^\\])*)(?P=q))?"
    ),
    skips=compiled(
        r"(?<![\w$])(?:describe|it|test|context|suite)\.(?:skip|only|todo|skipIf|runIf|fails)\b",
        r"(?<![\w.$])(?:x(?:it|describe|test|context)|f(?:it|describe))\s*\(",
        r"\bthis\.skip\s*\(",
    ),
    assertions=compiled(
        r"(?<![\w.$])expect\s*\(",
        r"(?<![\w.$])assert\s*\(",
        r"(?<![\w.$])assert\.\w+\s*\(",
        r"\.should\b",
    ),
    tautologies=compiled(
        r"\bexpect\s*\(\s*true\s*\)\s*\.\s*(?:toBe|toEqual|toBeTruthy)\s*\(\s*(?:true)?\s*\)",
        r"(?<![\w.$])assert\s*\(\s*true\s*\)",
    ),
)

_GO: Final = Syntax(
    comment="//",
    item=re.compile(r"^func\s+(?P<name>(?:Test|Fuzz|Example)\w*)\s*\("),
    skips=compiled(r"\b\w+\.Skip(?:f|Now)?\s*\("),
    assertions=compiled(
        r"\b(?:t|tt|b|f)\.(?:Error|Fatal|Fail)\w*\s*\(",
        r"\b(?:assert|require)\.\w+\s*\(",
    ),
    tautologies=compiled(r"\b(?:assert|require)\.True\s*\(\s*\w+\s*,\s*true\s*[,)]"),
)

_RUST: Final = Syntax(
    comment="//",
    attribute=re.compile(r"#\[\s*(?:test|tokio::test)\b"),
    declaration=re.compile(r"\bfn\s+(?P<name>\w+)"),
    skips=compiled(r"#\[\s*ignore\b"),
    assertions=compiled(r"\b(?:debug_)?assert\w*!"),
    tautologies=compiled(r"\bassert!\s*\(\s*true\s*[,)]"),
    test_attribute=re.compile(r"#\[\s*(?:test|tokio::test|cfg\s*\(\s*test\s*\))"),
)

_JVM: Final = Syntax(
    comment="//",
    breaks="\r",
    attribute=re.compile(r"@(?:Test|ParameterizedTest|RepeatedTest)\b"),
    declaration=re.compile(r"\bfun\s+(?P<name>`[^`]+`|\w+)\s*\(|\b(?P<java>\w+)\s*\("),
    skips=compiled(
        r"@(?:Disabled\w*|Ignore|EnabledIf\w*)\b",
        r"\b(?:Assumptions\.)?assume\w*\s*\(",
        r"@Test\s*\(\s*enabled\s*=\s*false\b",
    ),
    assertions=compiled(r"\bassert\w*\s*\(", r"\bverify\s*\("),
    tautologies=compiled(r"\bassertTrue\s*\(\s*true\s*\)"),
    test_attribute=re.compile(r"@Test\b"),
)

SYNTAX: Final = {
    Language.PYTHON: _PYTHON,
    Language.JAVASCRIPT: _JAVASCRIPT,
    Language.GO: _GO,
    Language.RUST: _RUST,
    Language.JVM: _JVM,
}
"""Each language's patterns."""

_EXTENSIONS: Final = {
    ".py": Language.PYTHON,
    ".js": Language.JAVASCRIPT,
    ".jsx": Language.JAVASCRIPT,
    ".mjs": Language.JAVASCRIPT,
    ".cjs": Language.JAVASCRIPT,
    ".ts": Language.JAVASCRIPT,
    ".tsx": Language.JAVASCRIPT,
    ".mts": Language.JAVASCRIPT,
    ".cts": Language.JAVASCRIPT,
    ".go": Language.GO,
    ".rs": Language.RUST,
    ".java": Language.JVM,
    ".kt": Language.JVM,
    ".kts": Language.JVM,
}


def language_of(path: str) -> Language | None:
    """The language a path's extension names, or None (docs, data, unknown languages)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    return _EXTENSIONS.get(name[dot:]) if dot > 0 else None
