"""A ``git`` that signals the process running it after a chosen command (a fault seam).

``python -m tests.faults.gitfault ARGS...`` runs the real git with ARGS, then, when ARGS start
with the words in ``GITFAULT_AFTER`` (``"commit --quiet"``) and the trigger file
``GITFAULT_ARMED`` still exists, removes that file (the fault fires once) and sends
``GITFAULT_SIGNAL`` (``SIGINT``, ``SIGTERM``, ``SIGKILL``) to its parent, the ralph process.
After a clean signal it waits to be stopped, so that ralph is still inside the git call when
the signal arrives: the point where a commit exists and ralph has not yet recorded it.

With ``GITFAULT_WHEN`` (a glob of absolute paths), the fault fires inside the command instead:
as soon as a path matching it exists while git runs (``.../worktrees/*/index.lock``: a
``git worktree add`` half done), git and the processes it started are killed (``SIGKILL``),
then ralph gets its signal: a machine going down in the middle of a git command. A command
that ends before the path appears leaves the fault armed.
:func:`install` puts a ``git`` first on a ``PATH`` that runs this for a command that may be the
fault's and the real git straight away for any other.
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
    """Write a ``git`` into ``folder`` that runs this module when the command may be the
    fault's (the real git otherwise); the ``PATH`` putting it first."""
    real = shutil.which("git")
    assert real is not None, "no git on PATH"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    root = Path(__file__).resolve().parents[2]
    # Only a command that may be the fault's starts Python: its words (after git's global
    # ``-c NAME=VALUE`` options) begin with GITFAULT_AFTER's while the trigger file is there.
    # Every other one (most of a run's git calls) runs the real git at once, without an
    # interpreter's start each; main() decides the candidates exactly.
    script.write_text(
        "#!/bin/sh\n"
        'if [ -n "$GITFAULT_AFTER" ] && [ -n "$GITFAULT_ARMED" ] '
        '&& [ -e "$GITFAULT_ARMED" ]; then\n'
        '    words=""; globals=1; skip=0\n'
        '    for word in "$@"; do\n'
        '        if [ "$skip" = 1 ]; then skip=0; continue; fi\n'
        '        if [ "$globals" = 1 ] && [ "$word" = "-c" ]; then skip=1; continue; fi\n'
        '        globals=0; words="$words$word "\n'
        "    done\n"
        '    case "$words" in\n'
        f'    "$GITFAULT_AFTER "*) GITFAULT_REAL="{real}" PYTHONPATH="{root}" exec '
        f'"{sys.executable}" -m tests.faults.gitfault "$@" ;;\n'
        "    esac\n"
        "fi\n"
        f'exec "{real}" "$@"\n'
    )
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def main(argv: list[str]) -> int:
    """Run the real git with ``argv``; fire the fault when it is this command's turn."""
    real = os.environ["GITFAULT_REAL"]
    after = os.environ.get("GITFAULT_AFTER", "").split()
    armed = os.environ.get("GITFAULT_ARMED")
    matched = bool(after) and armed is not None and _command(argv)[: len(after)] == after
    when = os.environ.get("GITFAULT_WHEN")
    if matched and when and armed is not None and os.path.exists(armed):
        return _inside(real, argv, when, armed)
    done = subprocess.run([real, *argv], check=False)
    if not matched or armed is None:
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


def _inside(real: str, argv: list[str], when: str, armed: str) -> int:
    """Run git, and kill it with everything it started once a path matching ``when`` exists;
    then signal ralph."""
    git = subprocess.Popen([real, *argv], start_new_session=True)
    while git.poll() is None:
        if glob.glob(when):
            os.killpg(git.pid, signal.SIGKILL)
            git.wait()
            os.unlink(armed)
            signum = signal.Signals[os.environ.get("GITFAULT_SIGNAL", "SIGKILL")]
            os.kill(os.getppid(), signum)
            if signum is not signal.SIGKILL:
                time.sleep(60)  # ralph abandons the git call and stops this process
            return git.returncode
        time.sleep(0.0005)
    return git.returncode


def _command(argv: list[str]) -> list[str]:
    """``argv`` without git's global ``-c NAME=VALUE`` options (ralph passes some)."""
    rest = list(argv)
    while len(rest) >= 2 and rest[0] == "-c":
        rest = rest[2:]
    return rest


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
