"""``/etc/passwd`` and ``/etc/group`` as the sandbox shows them (pure): the host's, with a line
for the uid inside when the host has none.

Programs ask who they are (Node's ``os.userInfo()`` throws without a passwd line, section 2
of ``docs/research/sandbox-design.md``); the handler writes these texts into the file
descriptors of :attr:`~pipeline.core.sandbox.MountInputs.passwd_fd` and ``group_fd``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["ACCOUNT_NAME", "with_account"]

ACCOUNT_NAME: Final = "ralph"
"""The name given to the uid inside when the host has no account for it."""


def _fields(text: str) -> list[list[str]]:
    return [line.split(":") for line in text.splitlines() if line and not line.startswith("#")]


def _append(text: str, line: str) -> str:
    return f"{text}{'' if not text or text.endswith(chr(10)) else chr(10)}{line}\n"


def with_account(passwd: str, group: str, uid: int, home: str) -> tuple[str, str]:
    """``passwd`` and ``group`` with an account and a group for ``uid`` (its gid too) added
    where none has that number, its home ``home`` and its shell ``/bin/sh``; a name already
    taken gets the number after it (``ralph1000``)."""
    users = _fields(passwd)
    groups = _fields(group)
    taken = {f[0] for f in users} | {f[0] for f in groups}
    name = ACCOUNT_NAME if ACCOUNT_NAME not in taken else f"{ACCOUNT_NAME}{uid}"
    if not any(len(f) > 2 and f[2] == str(uid) for f in users):
        passwd = _append(passwd, f"{name}:x:{uid}:{uid}:ralph's sandbox:{home}:/bin/sh")
    if not any(len(f) > 2 and f[2] == str(uid) for f in groups):
        group = _append(group, f"{name}:x:{uid}:")
    return passwd, group
