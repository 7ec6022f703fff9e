"""Whether this machine can run the sandbox: bubblewrap found, and a sandbox with every
namespace, no capability and ralph's death as its own actually started (I/O).

A probe runs ``bwrap`` twice (its version, then ``true`` in the sandbox the mount plan's
mandatory flags make) and says what it found in words a person can act on: the program
missing, user namespaces refused (with bwrap's own message), or on. It never weakens the
sandbox to make it start.

:func:`reach_from_inside` asks the same of endpoints, for ``ralph doctor``: whether each
answers from inside a bare sandbox, through the network gate an agent would get (a model
endpoint that answers outside but not inside is the sandbox's doing, and worth saying before
a run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import MANDATORY_FLAGS, RELAY_MOUNT, Endpoint
from pipeline.handlers._host_path import host_path
from pipeline.handlers.sandbox._gather import interpreter_dirs
from pipeline.handlers.sandbox._network import NetworkGate

__all__ = ["INSTALL_HINT", "Probe", "bare_sandbox", "probe", "reach_from_inside"]

INSTALL_HINT: Final = "install bubblewrap (apt-get install bubblewrap)"
"""How to get the sandbox on a machine without it (said with every reason it is off)."""

_TIMEOUT_S: Final = 10.0


@final
@frozen(kw_only=True)
class Probe:
    """What the probe found: ``program`` (bwrap's path) and ``version`` when the sandbox
    starts, else ``reason`` (why not, and how to fix it)."""

    program: str | None
    version: str | None
    reason: str | None
    uid: int | None = None
    """The uid inside: given when ralph runs as root (mapped from 0 outside), else None."""

    @property
    def works(self) -> bool:
        """Whether sandboxed processes can start."""
        return self.reason is None and self.program is not None

    @property
    def backend(self) -> str:
        """``bubblewrap 0.8.0``, or ``bubblewrap`` when the version is unknown."""
        return f"bubblewrap {self.version}" if self.version else "bubblewrap"


def bare_sandbox(program: str, uid: int | None) -> list[str]:
    """bwrap ``program``'s arguments for the barest sandbox: the mandatory flags, ``uid`` inside
    (None: the caller's), the host's root read-only, a fresh ``/dev`` and ``/proc``."""
    ids = [] if uid is None else ["--uid", str(uid), "--gid", str(uid)]
    system = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    return [program, *MANDATORY_FLAGS, *ids, *system]


def _run(argv: list[str]) -> tuple[int, str]:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            timeout=_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return 1, f"{argv[0]} did not answer within {_TIMEOUT_S:.0f} s"
    except OSError as error:
        return 1, str(error)
    text = (done.stderr or done.stdout).decode("utf-8", "replace").strip()
    return done.returncode, " ".join(text.split())[:300]


def probe(environ: Mapping[str, str], uid: int, untrusted: Iterable[str | Path] = ()) -> Probe:
    """Probe the sandbox for processes started with ``environ`` (its ``PATH`` finds bwrap,
    in no relative folder and none of ``untrusted``: the work trees, where an agent could put
    a ``bwrap`` that would then start every sandbox); ``uid`` is the uid inside when ralph
    runs as root."""
    program = shutil.which("bwrap", path=host_path(environ.get("PATH", os.defpath), untrusted))
    if program is None:
        return Probe(program=None, version=None, reason=f"bwrap not found on PATH: {INSTALL_HINT}")
    code, text = _run([program, "--version"])
    version = text.removeprefix("bubblewrap ").strip() if code == 0 else None
    inside = uid if os.geteuid() == 0 else None
    code, text = _run([*bare_sandbox(program, inside), "--", "true"])
    said = text or f"exit status {code}"
    reason = None if code == 0 else f"bwrap cannot start a sandbox here: {said}"
    return Probe(program=program, version=version, reason=reason, uid=inside)


_CHECK: Final = """
import json, socket, sys
endpoints, proxy, timeout = json.loads(sys.argv[1])
for host, port, relayed in endpoints:
    try:
        if relayed:
            # The relay accepts inside whatever the host says; it closes at once when nothing
            # listens there on this machine, while a server waits for a request.
            with socket.create_connection((host, port), timeout) as connection:
                connection.settimeout(min(timeout, 1.0))
                try:
                    closed = connection.recv(1) == b""
                except TimeoutError:
                    closed = False
            print(json.dumps("nothing answers there on this machine" if closed else None))
            continue
        with socket.create_connection(tuple(proxy), timeout) as connection:
            connection.settimeout(timeout)
            target = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            request = f"CONNECT {target} HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n"
            connection.sendall(request.encode())
            line = connection.makefile("rb").readline().decode("latin-1").strip()
        answer = line.split(" ", 2)
        ok = len(answer) > 1 and answer[1] == "200"
        print(json.dumps(None if ok else f"the gate answered {line!r}"), flush=True)
    except OSError as error:
        print(json.dumps(f"{type(error).__name__}: {error}"), flush=True)
"""


def reach_from_inside(
    probe: Probe, endpoints: Sequence[Endpoint], timeout_s: float = 3.0
) -> Mapping[Endpoint, str | None]:
    """For each of ``endpoints``: None when a connection to it from inside a sandbox (the
    same namespaces and network gate an agent gets) is answered, else why not. ``probe``
    must work."""
    assert probe.program is not None, "reach_from_inside needs a working probe"
    if not endpoints:
        return {}
    with NetworkGate(endpoints) as gate:
        proxy = next(((r.host, r.port) for r in gate.routes if r.target is None), None)
        todo = [(e.host, e.port, e.is_loopback) for e in endpoints]
        args = json.dumps([todo, proxy, timeout_s])
        command = gate.relay_command(sys.executable, [sys.executable, "-I", "-c", _CHECK, args])
        argv = [*bare_sandbox(probe.program, probe.uid), "--tmpfs", "/tmp", "--tmpfs", "/run"]
        for folder in interpreter_dirs(None):  # ralph's python runs the check inside
            argv += ["--ro-bind", folder, folder]
        argv += ["--bind", str(gate.folder), RELAY_MOUNT, "--", *command]
        try:
            done = subprocess.run(
                argv,
                capture_output=True,
                timeout=timeout_s * len(endpoints) + 10,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return dict.fromkeys(endpoints, f"the check could not run: {error}")
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    if len(lines) != len(endpoints):
        said = " ".join(done.stderr.decode("utf-8", "replace").split())[:300]
        return dict.fromkeys(endpoints, f"the check failed: {said or done.returncode}")
    return {e: json.loads(line) for e, line in zip(endpoints, lines, strict=True)}
