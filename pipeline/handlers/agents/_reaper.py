"""The process between ralph and each command it runs, which ends whatever the command left
behind when it exits (I/O: processes; Linux). Run by the interpreter ralph runs in, with the
standard library only, as a module imported from its folder (so that its cached bytecode is
used, not its source compiled at each start)::

    python -I -S -c BOOT FOLDER STATUS_FD LC_CTYPE PARENT -- COMMAND...

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

Its start is on the path of every command ralph runs, so it imports nearly nothing: ``os``
and the C halves of ``signal`` and ``ctypes`` (``_signal``, ``_ctypes``), without the enums
and helpers of the full modules (``signal`` alone costs 6 ms, ``contextlib`` 5, ``ctypes`` 4
on a bare start of 9), and it exits with ``os._exit`` once it has reported. When the leader
leaves no child behind, which is the usual case, it does not read ``/proc`` at all."""

from __future__ import annotations

# The C half of ``signal``: the same functions, with plain ints for the enums whose
# building is most of ``signal``'s import time. It has no stubs.
import _signal  # type: ignore[import-not-found]
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # not at run time: ``collections`` would cost a third of the start
    from collections.abc import Mapping, Sequence

__all__ = ["descendants", "main", "reaper_argv", "reaper_usable"]

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_BOUND_S = 10.0
"""How long the reaper keeps killing and reaping what is left (SIGKILL is not instant for a
process in uninterruptible sleep) before it exits anyway."""
_SIGKILL: int = _signal.SIGKILL
_SIGUSR1: int = _signal.SIGUSR1
_PASSED_ON: tuple[int, ...] = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)
_RESET: tuple[int, ...] = (*_PASSED_ON, _SIGUSR1, _signal.SIGPIPE, _signal.SIGXFSZ)
"""Reset in the command before it starts: the interpreter ignores SIGPIPE and SIGXFSZ, which
an ``exec`` would pass on."""
_BOOT = "import sys; sys.path.append(sys.argv[1]); import _reaper; _reaper.boot()"
"""The reaper's ``-c`` code: its module imported from its folder, placed last on the path so
that nothing there shadows the standard library."""


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
    folder = os.path.dirname(os.path.abspath(__file__))
    own = [sys.executable, "-I", "-S", "-c", _BOOT, folder, str(status_fd), said, str(os.getpid())]
    return [*own, "--", *command]


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where the system cannot.

    Called through ``_ctypes`` as ``ctypes.CDLL(None).prctl`` would be (a C ``int`` result),
    without the 4 ms of ``ctypes``'s own import."""
    try:
        import _ctypes

        class _Libc:
            # None: the program and its libraries, libc among them (the stubs omit it).
            _handle = _ctypes.dlopen(None, os.RTLD_NOW)  # type: ignore[arg-type]

        class _Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO

        # The stubs name ctypes.CDLL; CFuncPtr reads only the library's _handle.
        prctl = _Function(("prctl", _Libc()))  # type: ignore[arg-type]
        return int(prctl(option, value, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError, TypeError):
        return False


def descendants(root: int) -> list[int]:
    """Every live or dead-but-unreaped process below ``root``, read from ``/proc`` (parents
    before their children)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        entries = []
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue  # gone since the listing
        # The fields after the command name, which may hold ')': state, parent, ...
        parent = int(stat.rsplit(b")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(name))
    found: list[int] = []
    queue = [root]
    while queue:
        for child in children.get(queue.pop(), ()):
            found.append(child)
            queue.append(child)
    return found


def _signal_all(pids: list[int], number: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, number)
        except (ProcessLookupError, PermissionError):
            continue  # gone already, or no longer ours (no contextlib: see the module)


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
            try:
                if os.getpgid(pid) != group:
                    escaped.append(pid)
            except OSError:
                continue  # gone since the listing
        _signal_all(escaped, number)

    def told_to_end(self) -> bool:
        """Whether SIGUSR1 has come (a method: a signal handler may set it at any time)."""
        return self.kill_now

    def end_now(self, _number: int, _frame: object) -> None:
        """The grace period is over: the leader and everything below go at once."""
        self.kill_now = True
        _signal_all(descendants(os.getpid()), _SIGKILL)


def _spawn(command: list[str], env: dict[str, str], mask: set[int]) -> int:
    """Start ``command`` with the signal ``mask`` ralph gave: its pid, or ``OSError`` when it
    cannot be executed (reported through a close-on-exec pipe, as ``subprocess`` does)."""
    read, write = os.pipe()
    # Blocked until the command's own dispositions are in place: a handler of the reaper's
    # must not run in the command before its exec.
    own = _signal.pthread_sigmask(_signal.SIG_BLOCK, _RESET)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, until exec
        try:
            os.close(read)
            for number in _RESET:
                _signal.signal(number, _signal.SIG_DFL)
            _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
            os.execvpe(command[0], command, env)
        except OSError as error:
            os.write(write, str(error.errno or 0).encode())
        finally:
            os._exit(127)
    _signal.pthread_sigmask(_signal.SIG_SETMASK, own)
    os.close(write)
    failed = b""
    while chunk := os.read(read, 64):
        failed += chunk
    os.close(read)
    if failed:
        os.waitpid(pid, 0)
        code = int(failed)
        raise OSError(code, os.strerror(code))
    return pid


def _reap_all() -> bool:
    """Reap every child that has ended; whether none is left at all."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    except ChildProcessError:
        return True
    return False


def _sweep() -> None:
    """Kill and reap everything below this process, until nothing is left (or the bound).

    Every orphan below comes to this process, so "no child" means "nothing left": then
    ``/proc`` is not read at all."""
    if _reap_all():
        return
    deadline = time.monotonic() + _SWEEP_BOUND_S
    me = os.getpid()
    pause = 0.001
    while True:
        _signal_all(descendants(me), _SIGKILL)
        if _reap_all() or time.monotonic() > deadline:
            return
        time.sleep(pause)
        pause = min(pause * 2, 0.01)


def _say(fd: int, line: str) -> None:
    try:
        os.write(fd, line.encode() + b"\n")
    except OSError:
        return  # ralph gone: nobody to tell


def _let_stdin_go() -> None:
    """Put the null device in place of the standard input, so that a prompt's writer sees
    the command's end, not the reaper's."""
    try:
        quiet = os.open(os.devnull, os.O_RDONLY)
    except OSError:
        return  # stdin stays as it was: only a prompt's writer waits the longer
    os.dup2(quiet, 0)
    os.close(quiet)


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
        _signal.signal(number, reaper.pass_on)
    _signal.signal(_SIGUSR1, reaper.end_now)
    # ralph's mask is the command's; the reaper itself must hear its signals whatever it was.
    mask = _signal.pthread_sigmask(_signal.SIG_UNBLOCK, (*_PASSED_ON, _SIGUSR1))
    # ralph's death ends the command at once, as bwrap's --die-with-parent does; ralph gone
    # already (before the request took hold): nothing is started.
    _prctl(_PR_SET_PDEATHSIG, _SIGUSR1)
    if os.getppid() != int(parent) or reaper.told_to_end():
        return 0
    try:
        reaper.leader = _spawn(command, env, mask)
    except OSError as error:
        _say(fd, f"failed {error.errno}")
        return 0
    _say(fd, f"started {reaper.leader}")
    _let_stdin_go()
    if reaper.told_to_end():  # between the start and the report
        reaper.end_now(_SIGUSR1, None)
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


def boot() -> None:
    """The reaper process's entry (``_BOOT``): run, then exit at once, without the
    interpreter's tear-down (everything said is written already)."""
    code = main(sys.argv[2:])
    sys.stderr.flush()
    os._exit(code)
