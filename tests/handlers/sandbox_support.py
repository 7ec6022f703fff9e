"""What the network sandbox's tests share: a local HTTP server that records what it is asked,
free ports, the relay's own text on disk, and bwrap's command line around the relay."""

from __future__ import annotations

import contextlib
import http.server
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from attrs import frozen

from pipeline.core.sandbox import RELAY_MOUNT
from pipeline.handlers.sandbox import NetworkGate, WorkspacePaths, relay_source

PYTHON = sys.executable


@frozen
class Seen:
    """One request the server answered."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Origin

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        seen = Seen(self.command, self.path, dict(self.headers.items()), body)
        self.server.seen.append(seen)
        text = f"{self.command} {self.path} from {self.server.name}".encode() + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: object) -> None:
        pass


class Origin(http.server.ThreadingHTTPServer):
    """A server on ``127.0.0.1``, a free port, that answers ``METHOD PATH from NAME`` and
    the body, and keeps every request in ``seen``."""

    daemon_threads = True

    def __init__(self, name: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.name = name
        self.seen: list[Seen] = []

    @property
    def port(self) -> int:
        """Where it listens."""
        return self.server_address[1]


@contextlib.contextmanager
def origin(name: str = "origin") -> Iterator[Origin]:
    """A running :class:`Origin`, shut down on exit."""
    server = Origin(name)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def free_port() -> int:
    """A loopback port nothing listens on (at the time of asking)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def relay_file(folder: Path) -> Path:
    """The relay's text written to ``folder``: run from there it has no package around it."""
    path = folder / "relay.py"
    path.write_text(relay_source())
    return path


def python_agent(script: str) -> list[str]:
    """An agent that runs ``script`` in an isolated interpreter."""
    return [PYTHON, "-I", "-c", script]


def bwrap(relay_dir: Path | None, command: Sequence[str]) -> list[str]:
    """``command`` in a sandbox with every namespace unshared (the network's too) and, when
    given, ``relay_dir`` bound at ``/run/ralph`` (on a private ``/run``: ``/`` is read-only)."""
    bound = ["--bind", str(relay_dir), RELAY_MOUNT] if relay_dir is not None else []
    return [
        *("bwrap", "--unshare-all", "--die-with-parent", "--cap-drop", "ALL"),
        *("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"),
        *bound,
        "--",
        *command,
    ]


def run_sandboxed(
    gate: NetworkGate, agent: Sequence[str], timeout: float = 10.0
) -> subprocess.CompletedProcess[str]:
    """``agent`` behind the gate's relay in bwrap, with the gate's variables only."""
    command = gate.relay_command(PYTHON, agent)
    env = {"PATH": "/usr/bin:/bin", **gate.environment()}
    return subprocess.run(
        bwrap(gate.folder, command),
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def workspace_paths(tree: Path, git_dir: Path, common: Path) -> WorkspacePaths:
    """ralph's paths in the work tree ``tree`` (git folders ``git_dir`` and ``common``), as
    a run lays them out: the events file of run ``r1``, the state in the git folder."""
    return WorkspacePaths(
        workspace=tree,
        ralph_dir=tree / ".ralph",
        events_file=tree / ".ralph" / "events-r1.jsonl",
        marker_dir=tree / ".agent" / "tmp",
        config_file=tree / "ralph.toml",
        prompt_file=tree / "PROMPT.md",
        state_dir=git_dir / "ralph",
        git_dirs=(git_dir, common),
    )
