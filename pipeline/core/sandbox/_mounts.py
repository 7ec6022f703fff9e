"""Mounts as values, and laying them out so that no later mount undoes an earlier guard (pure).

bwrap applies its mount arguments in order and a later mount covers whatever an earlier one
put at the same place or below it (``--ro-bind / /`` first, ``--tmpfs $HOME`` over it, then
``--ro-bind ~/.pyenv ~/.pyenv`` back into the empty ``$HOME``). So the order is the policy,
and a careless order leaks: a ``read = ["~/.config"]`` entry bound after ``~/.config/gcloud``
was hidden shows it again; the writable workspace bound after ``.git/hooks`` was made
read-only makes it writable again.

:class:`Layout` takes mounts in the order of the design's section 6 and keeps two promises
whatever comes later:

- a **guard** (a hidden path, or a path made read-only) that a later mount uncovers (a host
  bind of the path or a parent; for a read-only guard, only a writable one) is laid again
  right after that mount, parents before children;
- a **needed** mount (the workspace, ralph's interpreter, a CLI's folder) that a later guard
  would hide, or make read-only when it must be writable, is a :class:`SandboxError` naming
  both: the inputs contradict each other, and no order can honour both.
"""

from __future__ import annotations

import enum
from typing import final

from attrs import frozen

from pipeline.core.sandbox._paths import SandboxError, depth, is_within

__all__ = ["Exposure", "Layout", "Mount"]


@enum.unique
class Exposure(enum.Enum):
    """What a mount shows at its destination."""

    READ = "read"
    """The host's files there, read-only."""
    WRITE = "write"
    """The host's files there, writable."""
    COVER = "cover"
    """Not the host's files: an empty tmpfs, ``/dev/null``, a fresh ``/dev`` or ``/proc``."""


@final
@frozen(kw_only=True)
class Mount:
    """One group of bwrap arguments and what it does at ``dest``.

    ``guard``: it must stay in force (re-laid when a later mount uncovers it).
    ``needed``: what it shows must stay visible (and writable when ``exposure`` is WRITE).
    ``what`` names it in error messages (``"the workspace"``, ``"write entry"``).
    """

    args: tuple[str, ...]
    dest: str
    exposure: Exposure
    what: str
    guard: bool = False
    needed: bool = False


def _breaks(later: Mount, guard: Mount) -> bool:
    """Whether ``later``, laid at the guard's path or a parent, undoes ``guard``."""
    if later.exposure is Exposure.WRITE:
        return True
    return later.exposure is Exposure.READ and guard.exposure is Exposure.COVER


def _last_over(mounts: list[Mount], path: str) -> Mount | None:
    """The last of ``mounts`` laid at ``path`` or a parent: what ``path`` shows after them."""
    return next((mount for mount in reversed(mounts) if is_within(path, mount.dest)), None)


class Layout:
    """A mount list being built: :meth:`add` appends a mount and re-lays what it uncovered;
    :meth:`finish` checks that every needed mount survived and gives the list."""

    def __init__(self) -> None:
        """An empty list."""
        self._mounts: list[Mount] = []
        self._guards: list[Mount] = []
        self._needed: list[tuple[int, Mount]] = []

    def shows(self, path: str) -> Exposure | None:
        """What ``path`` shows now (None: nothing laid over it yet)."""
        last = _last_over(self._mounts, path)
        return None if last is None else last.exposure

    def _in_force(self, guard: Mount) -> bool:
        """Whether ``guard`` holds now: the last mount over its path is itself, or one that does
        not undo it (a cover hides it anyway; a read-only mount keeps a read-only guard)."""
        last = _last_over(self._mounts, guard.dest)
        # At the guard's own path too: a cover laid there keeps a read-only guard (hidden is
        # more than read-only), which also keeps the two from re-laying each other forever.
        return last is not None and (last == guard or not _breaks(last, guard))

    def add(self, mount: Mount) -> None:
        """Lay ``mount`` where it changes something, then every guard it undid.

        A guard in force already is not laid (a hidden path inside an empty tmpfs needs no
        mount of its own, and none is created there); a read-only bind whose path shows the
        host read-only already is not laid either. Both are remembered: a guard to be re-laid,
        a needed mount to be checked by :meth:`finish`.
        """
        if mount.needed:
            self._needed.append((len(self._mounts), mount))
        if mount.guard:
            self._guards.append(mount)
        if mount.guard and not mount.needed:
            if self._in_force(mount):
                return
        elif mount.exposure is Exposure.READ and self.shows(mount.dest) is Exposure.READ:
            return
        self._mounts.append(mount)
        self._relay_guards(mount)

    def _relay_guards(self, mount: Mount) -> None:
        """Re-lay, parents first, the guards at or under ``mount``'s path that it undid (one
        re-laid read-only guard may undo a hidden path under it: the loop goes on)."""
        if mount.exposure is Exposure.COVER:
            return
        while True:
            broken = [
                guard
                for guard in self._guards
                if is_within(guard.dest, mount.dest) and not self._in_force(guard)
            ]
            if not broken:
                return
            self._mounts.append(min(broken, key=lambda guard: depth(guard.dest)))

    def finish(self) -> tuple[Mount, ...]:
        """The mounts laid, once every needed mount is checked: one that a later mount hides,
        or makes read-only where it must be writable, is a :class:`SandboxError`."""
        for position, mount in self._needed:
            last = _last_over(self._mounts[position:], mount.dest)
            if last is None or last == mount:
                continue
            if last.exposure is Exposure.COVER:
                verb = "hide"
            elif mount.exposure is Exposure.WRITE and last.exposure is Exposure.READ:
                verb = "make read-only"
            else:
                continue
            raise SandboxError(
                f"{last.what} ({last.dest}) would {verb} {mount.what} ({mount.dest}): "
                "the sandbox cannot honour both"
            )
        return tuple(self._mounts)
