"""Path globs as the configuration writes them (pure).

A glob without ``/`` matches a file's name in any folder (``conftest.py``, ``*.spec.*``); a
glob with ``/`` is anchored at the workspace root, and ``**`` spans any number of folders,
none included (``tests/**``, ``**/__tests__/**``). ``*`` and ``?`` never cross a ``/``.
"""

from __future__ import annotations

import functools
import re

__all__ = ["matches_any"]


@functools.lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    anchored = "/" in pattern.rstrip("/")
    glob = pattern.strip("/") if anchored else pattern.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(glob):
        c = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    return re.compile(body if anchored else f"(?:.*/)?{body}", re.DOTALL)


def matches_any(path: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``path`` (relative, ``/``-separated) matches one of ``patterns``."""
    return any(_compile(p).fullmatch(path) for p in patterns)
