"""The relay that runs inside the sandbox, run here as a plain subprocess from a copy of its
text (no package around it, ``-I``): it copies connections, runs the agent, passes signals and
the exit status on, and refuses to start the agent when it cannot listen."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.handlers.sandbox import RELAY_FAILED
from tests.handlers.sandbox_support import PYTHON, free_port, python_agent, relay_file

PAYLOAD = bytes(range(256)) * 4096
"""Every byte value, a megabyte: copied byte for byte or not at all."""


@pytest.fixture
def relay(tmp_path: Path) -> list[str]:
    """The command that runs the relay from its copied text."""
    return [PYTHON, "-I", str(relay_file(tmp_path))]


@pytest.fixture
def reverser(tmp_path: Path) -> Iterator[Path]:
    """A unix socket whose server reads until the client's half-close, then answers the bytes
    reversed and closes: it answers only if the half-close came through."""
    path = tmp_path / "reverse.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()

    def serve() -> None:
        try:
            connection, _ = server.accept()
        except OSError:
            return  # shut down with no client
        with connection:
            received = bytearray()
            while chunk := connection.recv(65536):
                received += chunk
            connection.sendall(bytes(reversed(received)))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path
    with contextlib.suppress(OSError):
        server.shutdown(socket.SHUT_RDWR)  # wakes an accept that no client came to
    server.close()
    thread.join(2)


def test_a_connection_is_copied_byte_for_byte_and_its_half_close_passes(
    relay: list[str], reverser: Path
) -> None:
    """A megabyte of every byte value goes through, the client's half-close reaches the
    server, and the answer comes back on the half-open connection."""
    port = free_port()
    expected = hashlib.sha256(bytes(reversed(PAYLOAD))).hexdigest()
    script = f"""
import hashlib, socket
with socket.create_connection(("127.0.0.1", {port})) as s:
    s.sendall(bytes(range(256)) * 4096)
    s.shutdown(socket.SHUT_WR)
    got = bytearray()
    while chunk := s.recv(65536):
        got += chunk
print(hashlib.sha256(got).hexdigest())
"""
    routes = ["--listen", f"127.0.0.1:{port}={reverser}"]
    done = subprocess.run(
        [*relay, *routes, "--", *python_agent(script)], capture_output=True, text=True, timeout=10
    )
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, expected, "")


def test_the_agent_gets_the_environment_and_standard_streams_and_no_listening_socket(
    relay: list[str], reverser: Path
) -> None:
    """The agent reads the relay's stdin, writes its stdout and stderr, sees its variables,
    and holds no descriptor but the three streams (the listener is not inherited)."""
    script = """
import os, sys
print(sys.stdin.read(), os.environ["RELAY_TEST"], sorted(os.listdir("/proc/self/fd"))[:4])
print("on stderr", file=sys.stderr)
"""
    routes = ["--listen", f"127.0.0.1:{free_port()}={reverser}"]
    done = subprocess.run(
        [*relay, *routes, "--", *python_agent(script)],
        input="from stdin",
        env={**os.environ, "RELAY_TEST": "passed"},
        capture_output=True,
        text=True,
        timeout=10,
    )
    # /proc/self/fd lists the descriptor listdir itself opened: 0, 1, 2 and that one.
    assert done.stdout == "from stdin passed ['0', '1', '2', '3']\n"
    assert (done.returncode, done.stderr) == (0, "on stderr\n")


@pytest.mark.parametrize(
    ("script", "status"),
    [
        ("import sys; sys.exit(7)", 7),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + signal.SIGKILL),
    ],
    ids=["exit-7", "killed-by-SIGKILL"],
)
def test_the_agent_s_exit_status_is_the_relay_s(relay: list[str], script: str, status: int) -> None:
    """The relay exits with the agent's status; killed by signal N, with 128 + N, as bwrap and
    shells report a killed command."""
    done = subprocess.run([*relay, "--", *python_agent(script)], timeout=10, check=False)
    assert done.returncode == status


@pytest.mark.parametrize(
    "number", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: str(s.name)
)
def test_a_signal_to_the_relay_reaches_the_agent(
    relay: list[str], tmp_path: Path, number: signal.Signals
) -> None:
    """SIGTERM, SIGINT and SIGHUP sent to the relay alone reach the agent, whose handler
    writes a marker and chooses the exit status."""
    marker = tmp_path / "marker"
    script = f"""
import pathlib, signal, sys, time
def stop(number, frame):
    pathlib.Path({str(marker)!r}).write_text(signal.Signals(number).name)
    sys.exit(3)
signal.signal({int(number)}, stop)
print("ready", flush=True)
time.sleep(10)
"""
    agent = subprocess.Popen(
        [*relay, "--", *python_agent(script)], stdout=subprocess.PIPE, text=True
    )
    assert agent.stdout is not None
    assert agent.stdout.readline() == "ready\n"
    agent.send_signal(number)
    assert agent.wait(timeout=5) == 3
    assert marker.read_text() == number.name
    agent.stdout.close()


def test_a_signal_to_the_relay_reaches_the_agent_s_children_too(
    relay: list[str], tmp_path: Path
) -> None:
    """The relay passes a signal on to the agent's process group: a program the agent runs
    gets it as well, as it would from ralph's own group signal without a sandbox."""
    marker = tmp_path / "marker"
    child = f"""
import pathlib, signal, sys, time
def stop(number, frame):
    pathlib.Path({str(marker)!r}).write_text("child stopped")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(10)
"""
    script = f"""
import signal, subprocess, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the agent itself waits for its child
sys.exit(subprocess.run({python_agent(child)!r}).returncode + 4)
"""
    agent = subprocess.Popen(
        [*relay, "--", *python_agent(script)], stdout=subprocess.PIPE, text=True
    )
    assert agent.stdout is not None
    assert agent.stdout.readline() == "ready\n"
    agent.send_signal(signal.SIGTERM)
    assert agent.wait(timeout=5) == 4
    assert marker.read_text() == "child stopped"
    agent.stdout.close()


def test_a_port_taken_fails_with_125_and_the_agent_never_starts(
    relay: list[str], tmp_path: Path
) -> None:
    """A listen that fails is said on stderr with its address, and the agent is not run."""
    marker = tmp_path / "ran"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        routes = ["--listen", f"127.0.0.1:{port}={tmp_path / 'x.sock'}"]
        agent = python_agent(f"open({str(marker)!r}, 'w')")
        done = subprocess.run([*relay, *routes, "--", *agent], capture_output=True, text=True)
    assert done.returncode == RELAY_FAILED == 125
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "the agent was not started" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize(
    "arguments",
    [
        ["true"],
        ["--listen", "127.0.0.1:1=/x.sock", "--"],
        ["--listen", "--", "true"],
        ["--forward", "127.0.0.1:1=/x.sock", "--", "true"],
        ["--listen", "127.0.0.1=/x.sock", "--", "true"],
        ["--listen", "127.0.0.1:1", "--", "true"],
    ],
    ids=["no-separator", "no-command", "no-route", "unknown-option", "no-port", "no-socket"],
)
def test_bad_arguments_fail_with_125(relay: list[str], arguments: list[str]) -> None:
    """Arguments the relay cannot follow are its own failure (125), said on stderr."""
    done = subprocess.run([*relay, *arguments], capture_output=True, text=True, timeout=10)
    assert done.returncode == 125
    assert done.stderr.startswith("ralph relay: ")


def test_a_missing_program_exits_127(relay: list[str], tmp_path: Path) -> None:
    """An agent program that does not exist is 127 with the relay's message, as in a shell."""
    missing = str(tmp_path / "no-such-agent")
    done = subprocess.run([*relay, "--", missing], capture_output=True, text=True, timeout=10)
    assert done.returncode == 127
    assert f"cannot run {missing!r}" in done.stderr
