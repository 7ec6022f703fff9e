"""Lines as the detectors read them: bounded, with line comments cut off (pure).

Every detector reads a text through :func:`lines`, which cuts each line to
:data:`MAX_LINE_CHARS`: the regular expressions then do bounded work per line, so a screen
costs time linear in its input whatever the text holds (one huge minified line included).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

__all__ = ["MAX_LINE_CHARS", "is_binary", "lines", "strip_comment"]

MAX_LINE_CHARS: Final = 4096
"""Characters of a line the detectors look at; the rest of a longer line is not read."""

_QUOTES: Final = "'\"`"


def is_binary(text: str) -> bool:
    """Whether a text holds a NUL, as git's own test for binary content does."""
    return "\x00" in text


def lines(text: str) -> Iterator[tuple[int, str]]:
    """Each line of ``text`` with its 1-based number, cut to :data:`MAX_LINE_CHARS`.

    Lines end at ``\\n`` only, as git counts them (``splitlines`` also breaks at form feeds
    and Unicode separators, which would shift the numbers a hit reports).
    """
    start = 0
    number = 0
    size = len(text)
    while start <= size:
        end = text.find("\n", start)
        if end < 0:
            end = size
        number += 1
        line = text[start : min(end, start + MAX_LINE_CHARS)]
        if not (end == size and start == size and number > 1):
            yield number, line.removesuffix("\r")
        start = end + 1


def strip_comment(line: str, marker: str) -> str:
    """``line`` without a trailing line comment that starts with ``marker`` outside quotes.

    Quotes are followed on the one line only (no block comments, docstrings or raw strings):
    a stated limit, good enough to keep a commented-out marker from counting.
    """
    if marker not in line:
        return line
    quote = ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in _QUOTES:
            quote = c
        elif line.startswith(marker, i):
            return line[:i]
        i += 1
    return line
