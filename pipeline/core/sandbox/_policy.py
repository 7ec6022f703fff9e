"""What ``[sandbox]`` in ``ralph.toml`` asks for, as one value (pure data and its checks).

The checks here need no workspace: paths well formed, ``protect`` inside the workspace, the
uid in range, no ``allow`` without a network. What depends on the machine or the workspace
(``write`` naming ralph's own files, a hidden path a ``read`` entry would uncover) is checked
where those are known: by the configuration and by :func:`~pipeline.core.sandbox.mount_plan`.
"""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Callable
from functools import partial
from typing import Any, Final, final

from attrs import Attribute, field, frozen

from pipeline.core.sandbox._endpoint import Endpoint
from pipeline.core.sandbox._paths import SandboxError
from pipeline.events import SandboxMode

__all__ = [
    "DEFAULT_UID",
    "MAX_UID",
    "NetworkMode",
    "SandboxMode",
    "SandboxPolicy",
    "check_protect",
    "path_problem",
    "pattern_problem",
    "protect_problem",
]

DEFAULT_UID: Final = 1000
"""The uid inside the sandbox when ralph runs as root: not 0, so that an agent's own nested
sandbox (a CLI's own) can map it (section 2 of the design)."""

MAX_UID: Final = 65533
"""The largest uid allowed inside: 65534 is ``nobody``, 65535 is reserved."""


@enum.unique
class NetworkMode(enum.StrEnum):
    """What the sandbox lets an agent reach."""

    ALLOW = "allow"
    """Its model endpoints (from its base-URL settings) and the ``allow`` entries."""
    NONE = "none"
    """Nothing at all."""


def path_problem(path: str, *, exposing: bool = False) -> str | None:
    """Why ``path`` cannot be a ``read``, ``write`` (``exposing``: it may not uncover all of
    ``$HOME`` or ``/``) or ``hide`` entry, or None: it must be a plain ``/...`` or ``~/...``
    path."""
    if path.startswith("~/"):
        rest = path[2:]
    elif path.startswith("/") and not path.startswith("//"):
        rest = path[1:]
    else:
        return "must be absolute or start with ~/"
    if "\0" in path:
        return "holds a NUL character"
    if rest and (posixpath.normpath(rest) != rest or rest.split("/")[0] == ".."):
        return "must be written plainly (no '.', '..', '//' or trailing '/')"
    if exposing and path in ("/", "~/"):
        return "would uncover all of $HOME"
    return None


def protect_problem(path: str) -> str | None:
    """Why ``path`` cannot be a ``protect`` entry (a plain path inside the workspace), or
    None."""
    normal = posixpath.normpath(path) if path else ""
    if (
        not path
        or path.startswith("/")
        or "\0" in path
        or normal != path
        or normal == "."
        or normal.split("/")[0] == ".."
    ):
        return "must be a plain path inside the workspace (relative, no '.', '..' or trailing '/')"
    return None


def pattern_problem(pattern: str) -> str | None:
    """Why ``pattern`` cannot be a ``pass_env`` entry (a variable name or shell pattern), or
    None."""
    if not pattern or "=" in pattern or "\0" in pattern or pattern != pattern.strip():
        return "is not a variable name or pattern"
    return None


def _check_each(
    problem: Callable[[str], str | None],
) -> Callable[[object, Attribute[Any], tuple[str, ...]], None]:
    def check(_instance: object, attribute: Attribute[Any], value: tuple[str, ...]) -> None:
        for entry in value:
            found = problem(entry)
            if found is not None:
                raise SandboxError(f"[sandbox] {attribute.name} entry {entry!r} {found}")

    return check


_check_paths = _check_each(path_problem)
_check_exposing_paths = _check_each(partial(path_problem, exposing=True))
check_protect = _check_each(protect_problem)
"""An attrs validator: every entry is a plain path inside the workspace."""
_check_patterns = _check_each(pattern_problem)


def _check_uid(_instance: object, _attribute: Attribute[Any], value: int) -> None:
    if type(value) is not int or not 1 <= value <= MAX_UID:
        raise SandboxError(f"[sandbox] uid must be from 1 to {MAX_UID}, got {value!r}")


@final
@frozen(kw_only=True)
class SandboxPolicy:
    """The decided sandbox of a run (``docs/research/sandbox-design.md``, section 5).

    Paths in ``read``, ``write`` and ``hide`` are absolute or ``~/``-relative; ``protect`` is
    relative to the workspace; ``pass_env`` holds variable names or shell patterns.
    """

    mode: SandboxMode = SandboxMode.AUTO
    network: NetworkMode = NetworkMode.ALLOW
    allow: tuple[Endpoint, ...] = ()
    """Endpoints reachable beside the agents' model endpoints (``network = "allow"`` only)."""
    read: tuple[str, ...] = field(default=(), validator=_check_exposing_paths)
    """More read-only paths, under ``$HOME`` or other hidden places."""
    write: tuple[str, ...] = field(default=(), validator=_check_exposing_paths)
    """More writable paths."""
    hide: tuple[str, ...] = field(default=(), validator=_check_paths)
    """More hidden paths, on top of the deny list."""
    protect: tuple[str, ...] = field(default=(), validator=check_protect)
    """More workspace paths bound read-only, on top of the default list."""
    pass_env: tuple[str, ...] = field(default=(), validator=_check_patterns)
    """More variables let through (names or ``fnmatch`` patterns)."""
    uid: int = field(default=DEFAULT_UID, validator=_check_uid)
    """The uid (and gid) inside when ralph runs as root."""

    def __attrs_post_init__(self) -> None:
        if self.network is NetworkMode.NONE and self.allow:
            raise SandboxError('[sandbox] allow needs network = "allow"')
