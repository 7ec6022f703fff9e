"""Lines as the detectors read them: bounded, with line comments cut off, and the marker
lines found in them (pure).

Every detector reads a text through :func:`lines`, which cuts each line to
:data:`MAX_LINE_CHARS`: the regular expressions then do bounded work per line, so a screen
costs time linear in its input whatever the text holds (one huge minified line included).
Every marker finder has one shape, :func:`markers` over :func:`code`: the lines where its
patterns match, each quoted and weighed by how many matches it holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from pipeline.core.screening._languages import SYNTAX
from pipeline.core.screening._model import DETAIL_CHARS, Language, Marker

__all__ = [
    "MAX_LINE_CHARS",
    "code",
    "is_binary",
    "lines",
    "listed",
    "marker",
    "markers",
    "plural",
    "strip_comment",
    "unquoted",
]

MAX_LINE_CHARS: Final = 4096
"""Characters of a line the detectors look at; the rest of a longer line is not read."""

_QUOTES: Final = "'\"`"


def is_binary(text: str) -> bool:
    """Whether a text holds a NUL, as git's own test for binary content does."""
    return "\x00" in text


def lines(text: str, breaks: str = "") -> Iterator[tuple[int, str]]:
    """Each line of ``text`` with its 1-based number, cut to :data:`MAX_LINE_CHARS`.

    Lines are numbered at ``\\n`` only, as git counts them (``splitlines`` also breaks at form
    feeds and Unicode separators, which would shift the numbers a hit reports). A line that
    holds one of ``breaks`` (what else ends a line for its reader) is given piece by piece,
    each with the line's number.
    """
    parts = text.split("\n")
    if len(parts) > 1 and not parts[-1]:
        parts.pop()  # the end of the last line, not a line of its own
    for number, line in enumerate(parts, 1):
        line = line[:MAX_LINE_CHARS].removesuffix("\r")
        if breaks and any(c in line for c in breaks):
            for piece in line.translate(dict.fromkeys(map(ord, breaks), "\n")).split("\n"):
                yield number, piece
        else:
            yield number, line


def unquoted(text: str) -> Iterator[int]:
    """The indexes of ``text``'s characters outside quotes, the quotes themselves left out
    (a backslash escapes the next character inside one).

    Quotes are followed on the one line only (no block comments, docstrings or raw strings):
    a stated limit, good enough to keep a commented-out marker from counting.
    """
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in _QUOTES:
            quote = c
        else:
            yield i
        i += 1


def strip_comment(line: str, marker: str) -> str:
    """``line`` without a trailing line comment that starts with ``marker`` outside quotes."""
    first = line.find(marker)
    if first < 0:
        return line
    if not any(quote in line[:first] for quote in _QUOTES):
        # The common line: no quote before the marker, so no walk through its characters
        # (the walk was most of the time a large test file took to screen).
        return line[:first]
    return next((line[:i] for i in unquoted(line) if line.startswith(marker, i)), line)


def code(
    language: Language | None, text: str, needles: tuple[str, ...] = ("",)
) -> Iterator[tuple[int, str]]:
    """The lines of ``text`` holding one of ``needles`` (a cheap test before the costly
    part), with ``language``'s line comments cut off (None: kept); none of a binary text."""
    if is_binary(text):
        return
    comment = None if language is None else SYNTAX[language].comment
    for number, line in lines(text, "" if language is None else SYNTAX[language].breaks):
        if any(needle in line for needle in needles):
            yield number, line if comment is None else strip_comment(line, comment)


def marker(number: int, line: str, count: int = 1) -> Marker:
    """A marker at line ``number`` quoting ``line`` (cut to fit a hit's detail)."""
    return Marker(line=number, text=line.strip()[:DETAIL_CHARS], count=count)


def markers(
    numbered: Iterable[tuple[int, str]], patterns: Sequence[re.Pattern[str]]
) -> tuple[Marker, ...]:
    """The lines where ``patterns`` match, each weighed by its number of matches."""
    found = []
    for number, line in numbered:
        count = sum(len(p.findall(line)) for p in patterns)
        if count:
            found.append(marker(number, line, count))
    return tuple(found)


_SHOWN: Final = 10
"""Names a hit's detail lists before it says how many more there are."""


def listed(names: Sequence[str]) -> str:
    """``names`` joined for a hit's detail: the first ten, then how many more."""
    shown = ", ".join(names[:_SHOWN])
    more = len(names) - _SHOWN
    return f"{shown}, ... ({more} more)" if more > 0 else shown


def plural(n: int, word: str) -> str:
    """``1 test``, ``2 tests``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
