"""The agent's state a pinned gate reads (``GateWorld``): taken from a copy of the work tree's
index, so only the files git has not seen unchanged are read again. Git trusts an entry's
recorded stat data unless the file changed no earlier than the index was written ("racily
clean"); a copy of the index stamped with a later time would hide an edit that kept the size
and the time, and the gate would check the code before the fix (seen with a `go test` gate in
a clean-clone CI run)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pipeline.handlers.runtime import GitPolicy, WorkspaceLayout
from pipeline.handlers.runtime._pinned import GateWorld


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, text=True
    )
    return done.stdout


def test_an_edit_in_the_same_second_as_the_index_is_what_the_gate_checks(tmp_path: Path) -> None:
    """An edit that keeps a file's size and time (as one in the same second as the index
    was written) still reaches the gate's tree: the index copy keeps the index's time, so git
    reads the file again instead of trusting the stat data."""
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    _git(root, "config", "user.email", "t@example.invalid")
    _git(root, "config", "user.name", "t")
    # ctime cannot be set back; git compares it only where the repository trusts it.
    _git(root, "config", "core.trustctime", "false")
    calc = root / "calc.py"
    calc.write_text("def add(a, b):\n    return a - b\n")
    # Written a minute ago: a copy of the index stamped now is not racy, whatever the clock.
    stamp = calc.stat().st_mtime_ns - 60 * 10**9
    os.utime(calc, ns=(stamp, stamp))
    _git(root, "add", "calc.py")
    _git(root, "commit", "-q", "-m", "buggy")
    base = _git(root, "rev-parse", "HEAD").strip()
    _git(root, "update-index", "--refresh")
    # The index written in the same instant as the file: git would read it again.
    index = root / ".git" / "index"
    os.utime(index, ns=(stamp, stamp))
    # The agent's fix: the same size, the same modification time.
    calc.write_text("def add(a, b):\n    return a + b\n")
    os.utime(calc, ns=(stamp, stamp))

    layout = WorkspaceLayout(root=root)
    index = layout.run_state("run-1", "gate-index")
    gates = GateWorld(root=root, run_id="run-1", policy=GitPolicy(), own=(), index=index)
    world = gates.lay_out(base, ("tests",), ())

    assert world is not None
    assert "a + b" in _git(root, "show", f"{world.person}:calc.py")
