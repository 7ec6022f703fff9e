"""Unix sockets on the host, with real bubblewrap: a socket bound in a folder the sandbox shows
read-only (a read-only bind still connects) answers nobody inside, while it still answers
outside; the kernel's list of sockets is read as it is."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.sandbox import SandboxPolicy
from pipeline.handlers.agents import ProcessSpec, run_process
from pipeline.handlers.sandbox import AgentNeeds, Sandbox, probe
from pipeline.handlers.sandbox._gather import host_sockets
from tests.handlers.sandbox_support import workspace_paths

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None and not os.environ.get("CI"),
    reason="bubblewrap is not installed",
)


@pytest.fixture
def listening() -> Iterator[tuple[Path, list[bytes]]]:
    """A unix socket server in a folder under /var/tmp (shown read-only in the sandbox), and
    what each connection to it sent."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                received.append(connection.recv(100))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path, received
    finally:
        stop.set()
        thread.join()
        server.close()
        shutil.rmtree(folder)


_CONNECT = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "try:\n"
    "    s.connect(sys.argv[1]); s.sendall(b'from inside'); print('CONNECTED')\n"
    "except OSError as e:\n"
    "    print('REFUSED', e)\n"
)


def test_the_kernels_list_names_a_bound_socket(listening: tuple[Path, list[bytes]]) -> None:
    """:func:`host_sockets` finds a socket bound to a path, resolved, and no abstract one."""
    path, _ = listening
    found = host_sockets()
    assert os.path.realpath(path) in found
    assert all(p.startswith("/") for p in found)


@needs_bwrap
def test_a_host_socket_in_a_shown_folder_is_unreachable_inside(
    tmp_path: Path, listening: tuple[Path, list[bytes]]
) -> None:
    """The socket answers outside; a sandboxed process that knows its path cannot connect,
    and the server hears nothing from it."""
    path, received = listening
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "--quiet", str(root)], check=True)
    paths = workspace_paths(root, root / ".git", root / ".git")
    (tmp_path / "home").mkdir()
    sandbox = Sandbox(policy=SandboxPolicy(), probe=probe(dict(os.environ), 1000), paths=paths)
    spec = ProcessSpec(
        argv=(sys.executable, "-c", _CONNECT, str(path)),
        cwd=root,
        env={**os.environ, "HOME": str(tmp_path / "home")},
        output_path=tmp_path / "out.log",
        total_timeout_s=30.0,
    )
    with sandbox.wrapped(spec, AgentNeeds()) as wrapped:
        done = run_process(wrapped.spec)
    said = (tmp_path / "out.log").read_text()
    assert done.exit_code == 0, said
    assert said.startswith("REFUSED"), said
    outside = subprocess.run(
        [sys.executable, "-c", _CONNECT, str(path)], capture_output=True, text=True, check=True
    )
    assert outside.stdout.startswith("CONNECTED")
    deadline = time.monotonic() + 5
    while not received and time.monotonic() < deadline:
        time.sleep(0.01)  # the server's thread records the connection after the client ends
    assert received == [b"from inside"]  # the one connection made outside, none from inside
