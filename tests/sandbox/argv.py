"""Reading a bwrap argument list back, independently of how ``mount_plan`` built it: which
flags take how many arguments, which arguments are paths, and what each mount shows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from attrs import frozen

ARITY: Final = {
    "--unshare-all": 0,
    "--die-with-parent": 0,
    "--new-session": 0,
    "--cap-drop": 1,
    "--uid": 1,
    "--gid": 1,
    "--ro-bind": 2,
    "--ro-bind-try": 2,
    "--bind": 2,
    "--bind-try": 2,
    "--dev": 1,
    "--proc": 1,
    "--tmpfs": 1,
    "--remount-ro": 1,
    "--ro-bind-data": 2,
    "--chdir": 1,
}
"""The flags a plan may hold and how many arguments each takes."""

PATH_ARGUMENTS: Final = {
    "--ro-bind": (0, 1),
    "--ro-bind-try": (0, 1),
    "--bind": (0, 1),
    "--bind-try": (0, 1),
    "--dev": (0,),
    "--proc": (0,),
    "--tmpfs": (0,),
    "--remount-ro": (0,),
    "--ro-bind-data": (1,),
    "--chdir": (0,),
}
"""Which of each flag's arguments are paths."""


@frozen
class Op:
    """One flag and its arguments."""

    flag: str
    args: tuple[str, ...]

    @property
    def dest(self) -> str | None:
        """Where the flag mounts something, if it does."""
        if self.flag in ("--ro-bind", "--ro-bind-try", "--bind", "--bind-try"):
            return self.args[1]
        if self.flag in ("--dev", "--proc", "--tmpfs", "--remount-ro"):
            return self.args[0]
        return None

    @property
    def shows(self) -> str | None:
        """``"read"``, ``"write"`` (the host's files) or ``"cover"`` (not the host's)."""
        if self.flag in ("--ro-bind", "--ro-bind-try"):
            return "cover" if self.args[0] == "/dev/null" else "read"
        if self.flag in ("--bind", "--bind-try"):
            return "write"
        if self.flag in ("--dev", "--proc", "--tmpfs"):
            return "cover"
        return None


def parse(argv: Sequence[str]) -> list[Op]:
    """The flags of ``argv`` with their arguments; an unknown flag is an assertion error."""
    ops = []
    index = 0
    while index < len(argv):
        flag = argv[index]
        assert flag in ARITY, f"unexpected argument {flag!r} at {index} in {argv}"
        count = ARITY[flag]
        ops.append(Op(flag, tuple(argv[index + 1 : index + 1 + count])))
        index += 1 + count
    return ops


def within(path: str, folder: str) -> bool:
    """``path`` is ``folder`` or under it."""
    return path == folder or folder == "/" or path.startswith(folder.rstrip("/") + "/")


def final_state(ops: Sequence[Op], path: str) -> str | None:
    """What ``path`` shows once every mount is laid: the last mount at it or a parent decides
    (a ``--remount-ro`` keeps a tmpfs a cover)."""
    for op in reversed(ops):
        dest = op.dest
        if dest is not None and op.shows is not None and within(path, dest):
            return op.shows
    return None


def index_of(ops: Sequence[Op], flag: str, dest: str) -> int:
    """The position of the last ``flag`` mounting at ``dest``."""
    found = [i for i, op in enumerate(ops) if op.flag == flag and op.dest == dest]
    assert found, f"no {flag} at {dest}"
    return found[-1]
