"""A ``git`` that signals the process running it after a chosen command (a fault seam).

``python -m tests.faults.gitfault ARGS...`` runs the real git with ARGS, then, when ARGS start
with the words in ``GITFAULT_AFTER`` (``"commit --quiet"``) and the trigger file
``GITFAULT_ARMED`` still exists, removes that file (the fault fires once) and sends
``GITFAULT_SIGNAL`` (``SIGINT``, ``SIGTERM``, ``SIGKILL``) to its parent, the ralph process.
After a clean signal it waits to be stopped, so that ralph is still inside the git call when
the signal arrives: the point where a commit exists and ralph has not yet recorded it.

``GITFAULT_DURING`` (``"worktree add"``) fires inside a command instead: the real git runs in a
session of its own, and once a path matching the glob ``GITFAULT_WHEN`` exists (the worktree's
``index.lock``: its checkout under way) the whole session is killed with SIGKILL (git and the
children it started, as a machine's crash would stop them), then the signal goes to ralph. A
command that ends before the path appears fires nothing.
:func:`install` puts a ``git`` running this first on a ``PATH``.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["install", "main"]


def install(folder: Path) -> str:
    """Write a ``git`` into ``folder`` that runs this module; the ``PATH`` putting it first."""
    real = shutil.which("git")
    assert real is not None, "no git on PATH"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    root = Path(__file__).resolve().parents[2]
    script.write_text(
        "#!/bin/sh\n"
        f'GITFAULT_REAL="{real}" PYTHONPATH="{root}" exec "{sys.executable}" '
        '-m tests.faults.gitfault "$@"\n'
    )
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def main(argv: list[str]) -> int:
    """Run the real git with ``argv``; fire the fault when it is this command's turn."""
    real = os.environ["GITFAULT_REAL"]
    during = os.environ.get("GITFAULT_DURING", "").split()
    if during and _command(argv)[: len(during)] == during:
        return _inside(real, argv)
    done = subprocess.run([real, *argv], check=False)
    after = os.environ.get("GITFAULT_AFTER", "").split()
    armed = os.environ.get("GITFAULT_ARMED")
    if not after or armed is None or _command(argv)[: len(after)] != after:
        return done.returncode
    try:
        os.unlink(armed)
    except FileNotFoundError:
        return done.returncode
    signum = signal.Signals[os.environ.get("GITFAULT_SIGNAL", "SIGKILL")]
    os.kill(os.getppid(), signum)
    if signum is not signal.SIGKILL:
        time.sleep(60)  # ralph abandons the git call and stops this process
    return done.returncode


def _inside(real: str, argv: list[str]) -> int:
    """Run the real git with ``argv``; kill it, its children and ralph once ``GITFAULT_WHEN``
    matches a path while it runs (when the trigger file is still there)."""
    armed = os.environ.get("GITFAULT_ARMED")
    pattern = os.environ["GITFAULT_WHEN"]
    git = subprocess.Popen([real, *argv], start_new_session=True)
    while git.poll() is None:
        if armed is not None and os.path.exists(armed) and glob.glob(pattern):
            os.unlink(armed)
            os.killpg(git.pid, signal.SIGKILL)
            git.wait()
            signum = signal.Signals[os.environ.get("GITFAULT_SIGNAL", "SIGKILL")]
            os.kill(os.getppid(), signum)
            if signum is not signal.SIGKILL:
                time.sleep(60)
            return -signal.SIGKILL
        time.sleep(0.002)
    return git.returncode


def _command(argv: list[str]) -> list[str]:
    """``argv`` without git's global ``-c NAME=VALUE`` options (ralph passes some)."""
    rest = list(argv)
    while len(rest) >= 2 and rest[0] == "-c":
        rest = rest[2:]
    return rest


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
