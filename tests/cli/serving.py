"""A real ``ralph serve`` for the tests that read it over HTTP (a browser, a socket)."""

from __future__ import annotations

import re
import select
import socket
import subprocess
import time

from tests.runtime.workspace import RALPH


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start_serve(*args: str, port: int) -> subprocess.Popen[str]:
    """``ralph serve ARGS --port PORT`` in its own process, returned once it listens; stopped
    (and the test failed) when it ends or does not listen within 30 s."""
    server = subprocess.Popen(
        [*RALPH, "serve", *args, "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return server
            except OSError:
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, "ralph serve never listened"
                time.sleep(0.1)
    except BaseException:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=30)
        raise


def printed_address(server: subprocess.Popen[str]) -> str:
    """The address a ``ralph serve`` that :func:`start_serve` started printed: the one its
    output tells the person to open."""
    assert server.stdout is not None
    ready, _, _ = select.select([server.stdout], [], [], 30)
    assert ready, "ralph serve printed no address"
    line = server.stdout.readline()
    said = re.fullmatch(r"Serving .* at (http://\S+) \(Ctrl-C stops\)\n", line)
    assert said is not None, line
    return said.group(1)
