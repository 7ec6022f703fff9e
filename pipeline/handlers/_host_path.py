"""The ``PATH`` ralph looks its own host programs up in (I/O: resolves links).

ralph runs some programs itself, outside the sandbox, with the person's rights: its own git,
and bubblewrap, which then starts every sandbox. Both are found on ``PATH``, which often
names a folder of the work tree (an activated ``.venv/bin``, a direnv layout, a
``node_modules/.bin``) or a relative folder (found from the process's folder, often the work
tree): a ``git`` or a ``bwrap`` an agent writes there would run as the person, and a planted
``bwrap`` would be every later agent's sandbox. So those lookups skip such entries. The
agents' own ``PATH`` is left as it is: inside the sandbox, the work tree's programs are theirs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

__all__ = ["host_path", "lies_in"]


def host_path(path: str, untrusted: Iterable[str | Path]) -> str:
    """``path`` (a ``PATH`` value) without its relative entries and those lying, as written or
    with links followed, in any of the folders ``untrusted`` (the work trees an agent writes)."""
    return _host_path(path, tuple(sorted({os.path.realpath(f) for f in untrusted})))


def lies_in(path: str | Path, untrusted: Iterable[str | Path]) -> bool:
    """Whether ``path``, as written (made absolute) or with links followed, lies in one of the
    folders ``untrusted``."""
    return _inside(str(path), tuple(sorted({os.path.realpath(f) for f in untrusted})))


def _inside(entry: str, untrusted: tuple[str, ...]) -> bool:
    found = (os.path.abspath(entry), os.path.realpath(entry))
    return any(os.path.commonpath((e, u)) == u for e in found for u in untrusted)


@lru_cache(maxsize=64)
def _host_path(path: str, untrusted: tuple[str, ...]) -> str:
    # Cached: ralph's git asks for every command, and neither the value nor where an entry
    # outside the work trees leads can be changed by an agent (it cannot write there).
    entries = path.split(os.pathsep)
    kept = [e for e in entries if e and os.path.isabs(e) and not _inside(e, untrusted)]
    # Never empty: an empty PATH is one empty entry, which finds a program in the current
    # folder (the work tree) when the child starts.
    return os.pathsep.join(kept) or os.pathsep.join(e for e in os.defpath.split(os.pathsep) if e)
