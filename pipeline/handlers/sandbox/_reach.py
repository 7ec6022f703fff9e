"""Whether endpoints answer from inside the sandbox, through the network gate an agent would
get (I/O: starts bwrap, opens connections). For ``ralph doctor``: a model endpoint that
answers outside but not inside is the sandbox's doing, and worth saying before a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Final

from pipeline.core.sandbox import RELAY_MOUNT, Endpoint
from pipeline.handlers.sandbox._gather import interpreter_dirs
from pipeline.handlers.sandbox._network import NetworkGate
from pipeline.handlers.sandbox._probe import Probe, bare_sandbox

__all__ = ["reach_from_inside"]

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
