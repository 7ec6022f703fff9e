"""Per-language counters: test items, assertions and markers in one text (pure).

Each counter reads the text's lines with line comments cut off (a commented-out test or
skip does not count), except :func:`find_todos`, whose markers live in comments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from pipeline.core.screening._classify import runner_sections
from pipeline.core.screening._languages import EXIT_FORCED, SYNTAX
from pipeline.core.screening._lines import is_binary, lines, strip_comment
from pipeline.core.screening._model import DETAIL_CHARS, Language, Marker, TestItem

__all__ = [
    "count_assertions",
    "count_items",
    "find_exits",
    "find_filters",
    "find_skips",
    "find_tautologies",
    "find_todos",
]

_FILTERS: Final = tuple(
    re.compile(p)
    for p in (
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
)


def _code(language: Language, text: str) -> Iterator[tuple[int, str]]:
    comment = SYNTAX[language].comment
    for number, line in lines(text):
        yield number, strip_comment(line, comment)


def _quote(line: str) -> str:
    return line.strip()[:DETAIL_CHARS]


def _markers(
    numbered: Iterator[tuple[int, str]], patterns: tuple[re.Pattern[str], ...]
) -> tuple[Marker, ...]:
    found = []
    for number, line in numbered:
        count = sum(len(p.findall(line)) for p in patterns)
        if count:
            found.append(Marker(line=number, text=_quote(line), count=count))
    return tuple(found)


def count_items(language: Language, text: str) -> tuple[TestItem, ...]:
    """The tests ``text`` declares, in order (Python ``def test_*``, ``it(``/``test(``...)."""
    if is_binary(text):
        return ()
    syntax = SYNTAX[language]
    items = []
    pending = False
    for number, line in _code(language, text):
        if syntax.item is not None:
            match = syntax.item.search(line)
            if match:
                items.append(TestItem(name=match["name"] or f"<line {number}>", line=number))
            continue
        rest = line
        attribute = syntax.attribute.search(line) if syntax.attribute else None
        if attribute:
            pending = True
            rest = line[attribute.end() :]
        stripped = rest.strip()
        if not pending or not stripped or (stripped.startswith(("@", "#[")) and not attribute):
            continue
        declared = syntax.declaration.search(rest) if syntax.declaration else None
        if declared:
            pending = False
            name = next(g for g in declared.groups() if g is not None)
            items.append(TestItem(name=name, line=number))
        elif not attribute:
            pending = False
    return tuple(items)


def count_assertions(language: Language, text: str) -> int:
    """How many assertions ``text`` makes (``assert``, ``expect(``, ``t.Error``...)."""
    if is_binary(text):
        return 0
    return sum(m.count for m in _markers(_code(language, text), SYNTAX[language].assertions))


def find_skips(language: Language, text: str) -> tuple[Marker, ...]:
    """The lines holding skip or focus markers (``@pytest.mark.skip``, ``it.only``...)."""
    if is_binary(text):
        return ()
    return _markers(_code(language, text), SYNTAX[language].skips)


def find_tautologies(language: Language, text: str) -> tuple[Marker, ...]:
    """The lines asserting a constant truth (``assert True``, ``expect(true).toBe(true)``)."""
    if is_binary(text):
        return ()
    return _markers(_code(language, text), SYNTAX[language].tautologies)


def find_exits(language: Language | None, text: str) -> tuple[Marker, ...]:
    """The lines that end a test run as passed (``session.exitstatus =``, ``os._exit(``)."""
    if is_binary(text):
        return ()
    numbered = _code(language, text) if language is not None else lines(text)
    return _markers(numbered, EXIT_FORCED)


def find_filters(path: str, text: str) -> tuple[Marker, ...]:
    """The lines of a runner configuration that deselect, ignore or filter tests."""
    if is_binary(text):
        return ()
    comment = "//" if ".config." in path or ".mocharc" in path else "#"
    numbered = ((n, strip_comment(line, comment)) for n, line in runner_sections(path, text))
    return _markers(iter(numbered), _FILTERS)


def find_todos(text: str, markers: tuple[str, ...]) -> tuple[Marker, ...]:
    """The lines holding one of ``markers`` as a word (``TODO``, ``FIXME``), comments included."""
    if not markers or is_binary(text):
        return ()
    pattern = re.compile("|".join(rf"(?<!\w){re.escape(m)}(?!\w)" for m in markers if m))
    if not pattern.pattern:
        return ()
    return _markers(lines(text), (pattern,))
