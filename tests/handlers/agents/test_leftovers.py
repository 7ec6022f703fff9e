"""What a command leaves behind ends with it: processes that left its group (``setsid``, a
double fork) and children that keep printing to its output are gone when ``run_process``
returns, which returns promptly at its leader's exit with the leader's own status, also when
several commands run at once in threads. Real subprocesses throughout."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from pipeline.handlers.agents import ProcessResult, ProcessSpec, run_process

SETSID_WRITER = """
setsid sh -c 'echo $$ > writer.pid; while :; do date >> grows.txt; sleep 0.05; done' \
    </dev/null >/dev/null 2>&1 &
while [ ! -s grows.txt ]; do sleep 0.01; done
echo started
"""
"""A command that starts a writer in a session of its own (outside its process group),
waits until the writer has written (its pid first, so both files are there), then exits 0."""

CHATTY_CHILD = """
sh -c 'echo $$ > ticker.pid; while :; do echo tick; sleep 0.01; done' &
while [ ! -s ticker.pid ]; do sleep 0.01; done
echo leader done
"""
"""A command that exits 0 leaving a child that prints to the inherited output without end."""

DAEMON = """
sh -c 'setsid sh -c "echo \\$\\$ > daemon.pid; exec sleep 600" </dev/null >/dev/null 2>&1 &' &
while [ ! -s daemon.pid ]; do sleep 0.01; done
"""
"""A command that daemonizes a quiet process as daemons do (fork, ``setsid``, fork: its
parent exits at once, so it is an orphan in a session of its own) and exits 0."""


_PROMPT_S = 30.0
"""What "at once" may take on a loaded machine: half the 60 s a command held by what it left
would take (and far from the 600 s a timed-out command deaf to its SIGTERM would sleep), so
the bound still tells the two apart, while a start that a busy machine slows does not fail."""


def _spec(tmp_path: Path, script: str, **overrides: object) -> ProcessSpec:
    values: dict[str, object] = {
        "argv": ("/bin/sh", "-c", script),
        "cwd": tmp_path,
        "env": dict(os.environ),
        "output_path": tmp_path / "output.log",
        "total_timeout_s": 60.0,
        "inactivity_timeout_s": 60.0,
        "grace_s": 1.0,
    }
    values.update(overrides)
    return ProcessSpec(**values)  # type: ignore[arg-type]


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _ended(pid: int) -> bool:
    """Whether ``pid`` has ended, waiting for it (as soon as it has, at most 30 s: a bound on a
    hang, never a time it should take; the leftovers here would live for minutes)."""
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


def _pid(path: Path) -> int:
    return int(path.read_text().split()[0])


def _run_timed(spec: ProcessSpec) -> tuple[ProcessResult, float]:
    started = time.monotonic()
    result = run_process(spec)
    return result, time.monotonic() - started


@pytest.fixture
def stray(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Kills whatever pid files the test left in ``tmp_path`` name, so that a failing test
    leaves no writer behind."""
    yield
    for name in ("writer.pid", "ticker.pid", "daemon.pid"):
        for path in tmp_path.rglob(name):
            with contextlib.suppress(OSError, ValueError):
                os.kill(_pid(path), 9)


@pytest.mark.usefixtures("stray")
def test_a_setsid_writer_stops_writing_when_its_command_ends(tmp_path: Path) -> None:
    """A writer started with ``setsid`` (a session, so a process group, of its own) is ended
    when the command that started it exits: the file it wrote stops growing."""
    result, _ = _run_timed(_spec(tmp_path, SETSID_WRITER))
    assert result.exit_code == 0
    writer = _pid(tmp_path / "writer.pid")
    assert _ended(writer), "the setsid writer outlived its command"
    size = (tmp_path / "grows.txt").stat().st_size
    time.sleep(0.5)
    assert (tmp_path / "grows.txt").stat().st_size == size


@pytest.mark.usefixtures("stray")
def test_a_chatty_child_neither_holds_the_command_nor_outlives_it(tmp_path: Path) -> None:
    """A command that exits 0 leaving a child printing to its output without end returns at
    once with its own status (0, no timeout), the child gone; before, it was held until the
    total timeout, its output kept flowing."""
    result, took = _run_timed(_spec(tmp_path, CHATTY_CHILD, total_timeout_s=60.0))
    assert took < _PROMPT_S, f"held {took:.1f}s by the chatty child"
    assert result.exit_code == 0
    assert result.timed_out is None
    assert b"leader done" in (tmp_path / "output.log").read_bytes()
    assert result.output_bytes == (tmp_path / "output.log").stat().st_size
    ticker = _pid(tmp_path / "ticker.pid")
    assert _ended(ticker)


@pytest.mark.usefixtures("stray")
def test_a_failing_leader_with_a_chatty_child_reports_its_failure_at_once(tmp_path: Path) -> None:
    """The leader's own exit status is the command's, whatever its child still prints."""
    result, took = _run_timed(_spec(tmp_path, CHATTY_CHILD + "exit 3\n"))
    assert took < _PROMPT_S
    assert result.exit_code == 3
    assert result.timed_out is None


@pytest.mark.usefixtures("stray")
def test_a_double_forked_daemon_is_ended_with_its_command(tmp_path: Path) -> None:
    """A daemon whose parent exited at once (an orphan, re-parented away from the command)
    is still ended with the command."""
    result, _ = _run_timed(_spec(tmp_path, DAEMON))
    assert result.exit_code == 0
    daemon = _pid(tmp_path / "daemon.pid")
    assert _ended(daemon)


@pytest.mark.usefixtures("stray")
def test_a_timed_out_command_takes_its_escaped_writer_with_it(tmp_path: Path) -> None:
    """A command stopped by its timeout has its setsid writer ended too, not only its group."""
    script = SETSID_WRITER + "sleep 600\n"
    result, took = _run_timed(_spec(tmp_path, script, total_timeout_s=1.0, grace_s=0.5))
    assert result.timed_out is not None
    assert took < _PROMPT_S
    writer = _pid(tmp_path / "writer.pid")
    assert _ended(writer)


@pytest.mark.usefixtures("stray")
def test_commands_run_at_once_end_only_their_own_leftovers(tmp_path: Path) -> None:
    """Three commands in threads: one leaves a daemon behind and exits at once, the others
    run their own daemon for their whole life and check it is still there before they exit,
    once the quick one has ended (its leftovers swept); each command's daemon is ended with
    it, and no command's end touches another's."""
    # Waits for the quick command's end itself (the file the test writes once run_process
    # returned), not for a time it should take: 30 s at most, then exit 8.
    lasting = """
    sh -c 'setsid sh -c "echo \\$\\$ > daemon.pid; exec sleep 600" </dev/null >/dev/null 2>&1 &' &
    while [ ! -s daemon.pid ]; do sleep 0.01; done
    waited=0
    while [ ! -e ../quick-ended ]; do
        [ "$waited" -lt 3000 ] || exit 8
        sleep 0.01; waited=$((waited + 1))
    done
    kill -0 "$(cat daemon.pid)" || exit 7
    """
    folders = [tmp_path / name for name in ("quick", "slow1", "slow2")]
    for folder in folders:
        folder.mkdir()
    results: dict[str, ProcessResult] = {}

    def run(folder: Path, script: str) -> None:
        results[folder.name] = run_process(_spec(folder, script))
        if folder.name == "quick":
            (tmp_path / "quick-ended").touch()

    threads = [
        threading.Thread(target=run, args=(folders[0], DAEMON)),
        threading.Thread(target=run, args=(folders[1], lasting)),
        threading.Thread(target=run, args=(folders[2], lasting)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert {name: r.exit_code for name, r in results.items()} == {
        "quick": 0,
        "slow1": 0,
        "slow2": 0,
    }
    for folder in folders:
        daemon = _pid(folder / "daemon.pid")
        assert _ended(daemon), folder.name


def test_exit_statuses_and_signals_come_through_unchanged(tmp_path: Path) -> None:
    """The command's exit code, and its death by a signal (negative), are reported as
    running it directly reports them."""
    assert run_process(_spec(tmp_path, "exit 42")).exit_code == 42
    assert run_process(_spec(tmp_path, "kill -TERM $$")).exit_code == -15
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    killed = run_process(_spec(tmp_path, "", argv=(sys.executable, "-c", code)))
    assert killed.exit_code == -9


def test_the_command_gets_exactly_the_environment_it_was_given(tmp_path: Path) -> None:
    """Nothing is added to or taken from the command's environment on its way (an
    interpreter in between must not, for example, set ``LC_CTYPE``)."""
    env = {"PATH": os.environ["PATH"], "ONLY": "this"}
    result = run_process(_spec(tmp_path, "", argv=("env", "-0"), env=env))
    assert result.exit_code == 0
    seen = (tmp_path / "output.log").read_bytes().split(b"\0")[:-1]
    assert sorted(seen) == [b"ONLY=this", f"PATH={env['PATH']}".encode()]


@pytest.mark.usefixtures("stray")
def test_a_command_started_with_signals_blocked_is_still_ended_with_what_it_left(
    tmp_path: Path,
) -> None:
    """Started from a thread that blocks SIGTERM and SIGUSR1 (as ralph's shutdown does), a
    command that ignores the timeout's SIGTERM is still ended promptly with its setsid
    writer: the reaper hears its signals whatever mask it inherited."""
    script = "trap '' TERM\n" + SETSID_WRITER + "sleep 600\n"  # deaf to the timeout's SIGTERM
    outcome: list[tuple[ProcessResult, float]] = []

    def blocked() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGUSR1})
        outcome.append(_run_timed(_spec(tmp_path, script, total_timeout_s=1.0, grace_s=0.5)))

    thread = threading.Thread(target=blocked)
    thread.start()
    thread.join(timeout=60)
    ((result, took),) = outcome
    assert result.timed_out is not None
    assert took < _PROMPT_S
    writer = _pid(tmp_path / "writer.pid")
    assert _ended(writer)


def test_the_command_inherits_the_signal_mask_it_was_started_with(tmp_path: Path) -> None:
    """The signals blocked in the thread that runs the command are blocked in the command,
    as when it was started directly: the reaper in between changes nothing of it."""
    outcome: list[ProcessResult] = []
    blocked = {signal.SIGTERM, signal.SIGUSR1}

    def run() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)
        argv = ("grep", "SigBlk", "/proc/self/status")
        outcome.append(run_process(_spec(tmp_path, "", argv=argv)))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert [r.exit_code for r in outcome] == [0]
    mask = int((tmp_path / "output.log").read_text().split()[1], 16)
    assert mask == sum(1 << (number - 1) for number in blocked)
