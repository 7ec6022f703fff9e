"""The network gate and its relay in a real bubblewrap sandbox (every namespace unshared, the
network's too): only what is allowed answers inside, the proxy refuses and counts, signals
and exit statuses pass through. Skipped where ``bwrap`` is not installed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.sandbox import Endpoint
from pipeline.handlers.sandbox import NetworkGate
from tests.handlers.sandbox_support import (
    PYTHON,
    Origin,
    bwrap,
    origin,
    python_agent,
    run_sandboxed,
)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")

ALIAS = "model.invalid"


@pytest.fixture
def allowed() -> Iterator[Origin]:
    with origin("allowed") as server:
        yield server


@pytest.fixture
def other() -> Iterator[Origin]:
    """A server on the host that the sandbox is not allowed to reach."""
    with origin("other") as server:
        yield server


def test_inside_the_allowed_port_answers_and_another_host_port_is_refused(
    allowed: Origin, other: Origin
) -> None:
    """The allowed endpoint answers at its own address inside; a port that listens on the
    host is refused inside (the sandbox's loopback is its own) and never sees a request."""
    script = f"""
import socket, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:{allowed.port}/in", timeout=5).read().decode())
try:
    socket.create_connection(("127.0.0.1", {other.port}), timeout=5)
except ConnectionRefusedError:
    print("refused")
"""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)]) as gate:
        done = run_sandboxed(gate, python_agent(script))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "GET /in from allowed\nrefused\n"
    assert other.seen == []


def test_with_nothing_allowed_the_agent_runs_without_a_relay_and_reaches_nothing(
    allowed: Origin,
) -> None:
    """No endpoint: the agent is the sandbox's command itself, and the host's port is refused."""
    script = f"""
import socket
try:
    socket.create_connection(("127.0.0.1", {allowed.port}), timeout=5)
except ConnectionRefusedError:
    print("refused")
"""
    with NetworkGate([]) as gate:
        assert gate.relay_command(PYTHON, ["x"]) == ("x",)
        done = subprocess.run(
            bwrap(None, python_agent(script)), capture_output=True, text=True, timeout=10
        )
    assert (done.returncode, done.stdout) == (0, "refused\n")


def test_inside_a_connect_to_a_port_not_listed_is_403_and_counted_on_the_host(
    allowed: Origin, other: Origin
) -> None:
    """A ``CONNECT`` through the proxy to a port not listed is answered 403 inside and counted
    by the gate outside; the allowed one through the proxy opens a tunnel."""
    script = f"""
import socket
for port in ({other.port}, {allowed.port}):
    with socket.create_connection(("127.0.0.1", 3128), timeout=5) as proxy:
        proxy.sendall(f"CONNECT 127.0.0.1:{{port}} HTTP/1.1\\r\\n\\r\\n".encode())
        print(proxy.recv(1000).split(b"\\r\\n")[0].decode())
"""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)], proxy=True) as gate:
        done = run_sandboxed(gate, python_agent(script))
        refused = gate.seen().refused
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "HTTP/1.1 403 Forbidden\nHTTP/1.1 200 Connection established\n"
    assert refused == {Endpoint("127.0.0.1", other.port): 1}
    assert other.seen == []


def test_inside_a_get_through_the_proxy_reaches_a_name_that_resolves_only_outside(
    allowed: Origin,
) -> None:
    """With the proxy variables the gate gives, an absolute-form GET to ``model.invalid``
    (which has no address inside: no DNS) reaches the aliased server in origin form."""
    script = f"""
import socket, urllib.request
try:
    socket.getaddrinfo("{ALIAS}", {allowed.port})
except socket.gaierror:
    print("no address inside")
print(urllib.request.urlopen("http://{ALIAS}:{allowed.port}/v1", timeout=5).read().decode())
"""
    endpoints = [Endpoint(ALIAS, allowed.port)]
    with NetworkGate(endpoints, aliases={ALIAS: "127.0.0.1"}) as gate:
        done = run_sandboxed(gate, python_agent(script))
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "no address inside\nGET /v1 from allowed\n"
    assert allowed.seen[0].headers["Host"] == f"{ALIAS}:{allowed.port}"


def _members(group: int) -> dict[int, list[bytes]]:
    """The processes of ``group`` (host pids) and their command lines, read from ``/proc``
    as ralph finds a sandbox's processes."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            command = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # ended meanwhile
        if int(fields[2]) == group:
            found[int(entry.name)] = command
    return found


def _relay_pid(group: int) -> int:
    """The host pid of the relay among the processes of ``group``."""
    # bwrap's own command line names the relay too: the relay's starts with its python
    (pid,) = (p for p, c in _members(group).items() if c[1:3] == [b"-I", b"/run/ralph/relay.py"])
    return pid


_COUNTING_AGENT = """
import signal, sys, time
got = []
signal.signal(signal.SIGTERM, lambda number, frame: got.append(number))
print("ready", flush=True)
while not got:
    time.sleep(0.01)
time.sleep(0.3)  # its grace: a second SIGTERM would arrive now
sys.exit(10 + len(got))
"""
"""An agent that counts the SIGTERMs it gets during a grace period: exit status 10 + count."""


def test_sigterm_to_the_sandbox_s_group_but_bwrap_reaches_the_agent_once(
    allowed: Origin,
) -> None:
    """Ralph's stop (SIGTERM to every process of bwrap's group but bwrap, section 9 of the
    design) reaches the agent exactly once, through the relay, with its grace: the agent has
    its own group inside, so it is not signalled a second time directly."""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)]) as gate:
        command = gate.relay_command(PYTHON, python_agent(_COUNTING_AGENT))
        sandbox = subprocess.Popen(
            bwrap(gate.folder, command), stdout=subprocess.PIPE, text=True, start_new_session=True
        )
        assert sandbox.stdout is not None
        assert sandbox.stdout.readline() == "ready\n"
        for pid in _members(sandbox.pid).keys() - {sandbox.pid}:
            os.kill(pid, signal.SIGTERM)
        assert sandbox.wait(timeout=5) == 11
        sandbox.stdout.close()


def test_sigterm_to_the_relay_inside_reaches_the_agent(allowed: Origin) -> None:
    """SIGTERM sent to the relay alone (found by the sandbox's process group, as ralph finds
    its processes) reaches the agent, whose handler runs; its status is bwrap's."""
    script = """
import os, signal, sys, time
def stop(number, frame):
    # os.write, not print: the signal may land while print("ready") still holds stdout
    os.write(1, f"agent got {signal.Signals(number).name}\\n".encode())
    sys.exit(3)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
time.sleep(10)
"""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)]) as gate:
        command = gate.relay_command(PYTHON, python_agent(script))
        sandbox = subprocess.Popen(
            bwrap(gate.folder, command),
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={"PATH": os.environ["PATH"]},
        )
        assert sandbox.stdout is not None
        assert sandbox.stdout.readline() == "ready\n"
        os.kill(_relay_pid(sandbox.pid), signal.SIGTERM)
        assert sandbox.wait(timeout=5) == 3
        assert sandbox.stdout.read() == "agent got SIGTERM\n"
        sandbox.stdout.close()


@pytest.mark.parametrize(
    ("script", "status"),
    [
        ("import sys; sys.exit(7)", 7),
        ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", 128 + signal.SIGKILL),
    ],
    ids=["exit-7", "killed-by-SIGKILL"],
)
def test_the_agent_s_exit_status_passes_through_the_relay_and_bwrap(
    allowed: Origin, script: str, status: int
) -> None:
    """bwrap exits with the agent's status, 128 + N for a signal, as without the relay."""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)]) as gate:
        assert run_sandboxed(gate, python_agent(script)).returncode == status


def test_a_listen_that_fails_inside_exits_125_and_the_agent_never_runs(allowed: Origin) -> None:
    """The same address given twice (a port already taken inside): 125, said on stderr, and
    the agent never starts."""
    with NetworkGate([Endpoint("127.0.0.1", allowed.port)]) as gate:
        twice = [*gate.relay_arguments(), *gate.relay_arguments()]
        command = [PYTHON, "-I", "/run/ralph/relay.py", *twice, "--", "echo", "agent ran"]
        done = subprocess.run(
            bwrap(gate.folder, command), capture_output=True, text=True, timeout=10
        )
    assert (done.returncode, done.stdout) == (125, "")
    assert f"cannot listen on 127.0.0.1:{allowed.port}" in done.stderr


def test_an_ipv6_loopback_endpoint_is_relayed_at_its_own_address(allowed: Origin) -> None:
    """``[::1]:PORT`` answers inside at ``::1`` (here aliased to the IPv4 server outside)."""
    script = f"""
import urllib.request
print(urllib.request.urlopen("http://[::1]:{allowed.port}/six", timeout=5).read().decode())
"""
    with NetworkGate([Endpoint("::1", allowed.port)], aliases={"::1": "127.0.0.1"}) as gate:
        done = run_sandboxed(gate, python_agent(script))
    assert (done.returncode, done.stdout, done.stderr) == (0, "GET /six from allowed\n", "")


def test_a_loopback_endpoint_below_1024_cannot_be_relayed_with_every_capability_dropped() -> None:
    """A limit, measured: inside, binding a port below 1024 needs CAP_NET_BIND_SERVICE
    (``ip_unprivileged_port_start`` is 1024 in the new network namespace), so the relay cannot
    listen on ``127.0.0.1:80`` and exits 125 before the agent."""
    with NetworkGate([Endpoint("127.0.0.1", 80)]) as gate:
        done = run_sandboxed(gate, ["echo", "agent ran"])
    assert (done.returncode, done.stdout) == (125, "")
    assert "cannot listen on 127.0.0.1:80: Permission denied" in done.stderr
