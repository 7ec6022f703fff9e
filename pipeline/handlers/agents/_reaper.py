"""The process between ralph and each command it runs, which ends whatever the command left
behind when it exits (I/O: processes; Linux). Run as a script, by the interpreter ralph runs
in, with the standard library only::

    python -I -S _reaper.py STATUS_FD LC_CTYPE PARENT -- COMMAND...

Why a process of its own. A command's end is its leader's exit; what it started must end with
it, also what left its process group (``setsid``, a double fork: a dev server, a ticker, a
writer in the work tree). Such a process is found only through its ancestry, and an orphan's
ancestry is lost when it is re-parented to init. A *child subreaper* (``prctl(2)``,
``PR_SET_CHILD_SUBREAPER``) receives the orphans of its descendants instead. Making ralph's own
process the subreaper would mix the orphans of every command ralph runs at once (a relay, the
threads of a test session, the engine's git commands), which it could not tell apart, and
reaping them would take ``waitpid(-1)``, which steals the exit statuses ``subprocess`` waits
for. One reaper per command keeps it
exact by construction: its descendants are the command's, all of them, and nothing else; it
may reap with ``wait()`` freely, having no other children. A cgroup would do as well but needs
a delegated hierarchy, which containers and CI machines often lack; the subreaper needs nothing.

What it does:

1. It becomes a subreaper and starts the command (``execvpe``, the environment it was given:
   ``LC_CTYPE`` is put back as ralph had it, the interpreter having set it when the locale was
   C). It reports ``started PID`` on ``STATUS_FD`` (or ``failed ERRNO`` when the command
   cannot be executed) and lets its standard input go, so that a prompt's writer sees the
   command's end, not the reaper's.
2. It waits, reaping its orphans as they die, until the leader exits.
3. It kills every process still below it with SIGKILL, as a group left behind is killed when
   its leader exits, reaps them all (a descendant whose parent dies comes to it, so "no child
   left" means "nothing left"), reports ``ended CODE`` (negative: killed by that signal) and
   exits. Only then does the command's output reach its end of file: a child that kept
   printing holds nothing.

Signals from ralph: SIGTERM (a timeout's first step, sent to the whole group) is passed on to
the descendants outside the reaper's group, so that escaped processes get the same grace
period; SIGUSR1 (the grace period is over) kills the leader and every descendant at once.
SIGUSR1 is also the reaper's parent-death signal (``PR_SET_PDEATHSIG``): when ralph (``PARENT``)
dies, even by ``kill -9``, the command and all it started end with it, as bwrap's
``--die-with-parent`` ends a sandbox (bwrap's parent is the reaper).

Its limit: a process of the same user outside any sandbox can kill the reaper first, and its
orphans then go to init. In the sandbox the command cannot see the reaper (its own pid
namespace), and bwrap's namespace ends all of it anyway.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence

__all__ = ["descendants", "main", "reaper_argv", "reaper_usable"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_BOUND_S = 10.0
"""How long the reaper keeps killing and reaping what is left (SIGKILL is not instant for a
process in uninterruptible sleep) before it exits anyway."""
_PASSED_ON = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_RESET = (*_PASSED_ON, signal.SIGUSR1, signal.SIGPIPE, signal.SIGXFSZ)
"""Reset in the command before it starts: the interpreter ignores SIGPIPE and SIGXFSZ, which
an ``exec`` would pass on."""


def reaper_usable() -> bool:
    """Whether commands can run behind a reaper here (Linux, this file and the interpreter
    at hand)."""
    return sys.platform == "linux" and bool(sys.executable) and os.path.isfile(__file__)


def reaper_argv(status_fd: int, env: Mapping[str, str], command: Sequence[str]) -> list[str]:
    """The argv that runs ``command`` behind a reaper reporting on ``status_fd``, for a
    process started with the environment ``env`` by this process (its parent)."""
    # The interpreter sets LC_CTYPE when the locale is C: the reaper puts it back as it was.
    lc_ctype = env.get("LC_CTYPE")
    said = "-" if lc_ctype is None else f"={lc_ctype}"
    own = [sys.executable, "-I", "-S", __file__, str(status_fd), said, str(os.getpid())]
    return [*own, "--", *command]


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where the system cannot."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live or dead-but-unreaped process below ``root``, read from ``/proc`` (parents
    before their children)."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"{entry.path}/stat", "rb") as handle:
                    stat = handle.read()
            except OSError:
                continue  # gone since the listing
            # The fields after the command name, which may hold ')': state, parent, ...
            parent = int(stat.rsplit(b")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry.name))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def _signal_all(pids: list[int], number: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, number)


class _Reaper:
    """The reaper's state: the leader once started, and the signal handlers that act on it."""

    def __init__(self) -> None:
        self.leader: int | None = None
        self.kill_now = False

    def pass_on(self, number: int, _frame: object) -> None:
        """A stop request for the group: the escaped descendants get it too."""
        group = os.getpgrp()
        escaped = []
        for pid in descendants(os.getpid()):
            with contextlib.suppress(OSError):
                if os.getpgid(pid) != group:
                    escaped.append(pid)
        _signal_all(escaped, number)

    def told_to_end(self) -> bool:
        """Whether SIGUSR1 has come (a method: a signal handler may set it at any time)."""
        return self.kill_now

    def end_now(self, _number: int, _frame: object) -> None:
        """The grace period is over: the leader and everything below go at once."""
        self.kill_now = True
        _signal_all(descendants(os.getpid()), signal.SIGKILL)


def _spawn(command: list[str], env: dict[str, str], mask: set[int | signal.Signals]) -> int:
    """Start ``command`` with the signal ``mask`` ralph gave: its pid, or ``OSError`` when it
    cannot be executed (reported through a close-on-exec pipe, as ``subprocess`` does)."""
    read, write = os.pipe()
    # Blocked until the command's own dispositions are in place: a handler of the reaper's
    # must not run in the command before its exec.
    own = signal.pthread_sigmask(signal.SIG_BLOCK, _RESET)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, until exec
        try:
            os.close(read)
            for number in _RESET:
                signal.signal(number, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.execvpe(command[0], command, env)
        except OSError as error:
            os.write(write, str(error.errno or 0).encode())
        finally:
            os._exit(127)
    signal.pthread_sigmask(signal.SIG_SETMASK, own)
    os.close(write)
    with open(read, "rb") as pipe:
        failed = pipe.read()
    if failed:
        os.waitpid(pid, 0)
        code = int(failed)
        raise OSError(code, os.strerror(code))
    return pid


def _sweep() -> None:
    """Kill and reap everything below this process, until nothing is left (or the bound)."""
    deadline = time.monotonic() + _SWEEP_BOUND_S
    me = os.getpid()
    while True:
        _signal_all(descendants(me), signal.SIGKILL)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] != 0:
                pass
        except ChildProcessError:
            return  # no child: every orphan comes here, so nothing is left below
        if time.monotonic() > deadline:
            return
        time.sleep(0.01)


def _say(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, line.encode() + b"\n")


def main(args: list[str]) -> int:
    """Run the command in ``args`` (see the module's text) and end what it leaves."""
    status_fd, lc_ctype, parent, separator, *command = args
    if separator != "--" or not command:
        print("usage: _reaper.py STATUS_FD LC_CTYPE PARENT -- COMMAND...", file=sys.stderr)
        return 2
    fd = int(status_fd)
    os.set_inheritable(fd, False)
    env = dict(os.environ)
    if lc_ctype == "-":
        env.pop("LC_CTYPE", None)
    else:
        env["LC_CTYPE"] = lc_ctype.removeprefix("=")
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    reaper = _Reaper()
    for number in _PASSED_ON:
        signal.signal(number, reaper.pass_on)
    signal.signal(signal.SIGUSR1, reaper.end_now)
    # ralph's mask is the command's; the reaper itself must hear its signals whatever it was.
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, (*_PASSED_ON, signal.SIGUSR1))
    # ralph's death ends the command at once, as bwrap's --die-with-parent does; ralph gone
    # already (before the request took hold): nothing is started.
    _prctl(_PR_SET_PDEATHSIG, signal.SIGUSR1)
    if os.getppid() != int(parent) or reaper.told_to_end():
        return 0
    try:
        reaper.leader = _spawn(command, env, mask)
    except OSError as error:
        _say(fd, f"failed {error.errno}")
        return 0
    _say(fd, f"started {reaper.leader}")
    with contextlib.suppress(OSError):
        quiet = os.open(os.devnull, os.O_RDONLY)
        os.dup2(quiet, 0)
        os.close(quiet)
    if reaper.told_to_end():  # between the start and the report
        reaper.end_now(signal.SIGUSR1, None)
    code = None
    while code is None:
        try:
            pid, status = os.wait()
        except ChildProcessError:  # pragma: no cover - the leader is ours until reaped
            break
        if pid == reaper.leader:
            code = os.waitstatus_to_exitcode(status)
    _sweep()
    _say(fd, f"ended {code}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
