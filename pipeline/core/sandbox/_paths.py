"""Path arithmetic on ``/``-separated strings, for the mount plan and the policy, and the
package's error, :class:`SandboxError` (pure).

Plain strings rather than :class:`pathlib.Path`: the plan is argv for bwrap, and nothing here
may look at the file system (``Path.resolve`` would). The handler gives real paths (links
resolved); these functions only compare and join them.
"""

from __future__ import annotations

import posixpath
from typing import Any

from attrs import Attribute

from pipeline import PipelineError

__all__ = [
    "SandboxError",
    "absolute",
    "depth",
    "each_absolute",
    "expand_home",
    "is_within",
    "join",
    "normal_absolute",
]


class SandboxError(PipelineError, ValueError):
    """A sandbox setting or input that cannot be honoured (names the offending value)."""


def _check_absolute(path: str, what: str) -> None:
    """A :class:`SandboxError` naming ``what`` ``path`` was meant to be, unless it is absolute
    and already normal: no ``.``, ``..``, ``//`` or trailing ``/`` (but ``/`` itself), and no
    NUL (which argv cannot carry)."""
    clean = path.startswith("/") and not path.startswith("//") and "\0" not in path
    if not clean or posixpath.normpath(path) != path:
        raise SandboxError(f"{what} must be a normal absolute path, got {path!r}")


def absolute(_instance: object, attribute: Attribute[Any], value: str | None) -> None:
    """An attrs validator: ``value`` (None allowed) is absolute and normal."""
    if value is not None:
        _check_absolute(value, attribute.name)


def each_absolute(_instance: object, attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    """An attrs validator: every path in ``value`` is absolute and normal."""
    for path in value:
        _check_absolute(path, f"a {attribute.name} entry")


def normal_absolute(path: str) -> str | None:
    """``path`` made clean (``/x/y/`` is ``/x/y``) when it is absolute and has no NUL, else
    None: how a program reading the path from a variable would take it."""
    if not path.startswith("/") or "\0" in path:
        return None
    return posixpath.normpath("/" + path.lstrip("/"))


def is_within(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (both clean and absolute)."""
    return path == folder or folder == "/" or path.startswith(folder + "/")


def depth(path: str) -> int:
    """How many names ``path`` has below ``/`` (``/`` is 0): parents sort before children."""
    return 0 if path == "/" else path.count("/")


def join(folder: str, relative: str) -> str:
    """``relative`` (``/``-separated, no ``..``) under ``folder``, normalized."""
    return posixpath.normpath(posixpath.join(folder, relative))


def expand_home(path: str, home: str) -> str:
    """``path`` with a leading ``~`` or ``~/`` replaced by ``home``; an absolute path as it
    is; anything else (``~user``, a relative path) is a :class:`SandboxError`."""
    if path == "~":
        return home
    if path.startswith("~/"):
        return join(home, path[2:])
    if path.startswith("/"):
        return path
    raise SandboxError(f"a sandbox path must be absolute or start with ~/, got {path!r}")
