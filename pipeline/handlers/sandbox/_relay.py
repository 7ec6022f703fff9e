"""The network relay that runs inside the sandbox, in front of the agent (I/O, stdlib only).

``python -I /run/ralph/relay.py --listen HOST:PORT=SOCKET ... [--proxy HOST:PORT=SOCKET] --
AGENT_ARGV...`` listens on each TCP address (the sandbox's own loopback), copies every
connection byte for byte to its unix socket (served outside by ralph's ``NetworkGate``), then
runs the agent as its child with the same environment and standard streams (in its own process
group), passes SIGTERM, SIGINT and SIGHUP on to that group, and exits with its status.

Exit status: the agent's own; ``128 + N`` when it was killed by signal N (what bwrap and shells
report for a killed command, so wrapping changes nothing); ``125`` when a listen failed or the
arguments are wrong, and then the agent never started; ``127`` (``126``) when the agent's
program is not found (not executable). ``--proxy`` behaves as ``--listen``: it only names the
HTTP proxy's address in the command line.

Runs with ``-I`` where ``pipeline`` is not importable: it imports the standard library only,
and ralph copies this file's text into the relay folder (``relay_source()``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading

FAILED = 125
"""The relay's own failure (a listen, its arguments): the agent was not started."""

_CHUNK = 65_536
_FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def copy(source: socket.socket, target: socket.socket) -> None:
    """Copy until ``source`` ends, then end ``target``'s writing half, so a half-close passes
    through; an error shuts both sockets down, which ends the opposite copy too."""
    try:
        while data := source.recv(_CHUNK):
            target.sendall(data)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        for end in (source, target):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)


def splice(a: socket.socket, b: socket.socket) -> None:
    """Copy both ways between ``a`` and ``b`` until both directions have ended, then close
    both (one extra thread, joined here)."""
    with a, b:
        name = f"{threading.current_thread().name} back"
        back = threading.Thread(target=copy, args=(b, a), name=name, daemon=True)
        back.start()
        copy(a, b)
        back.join()


def _bridge(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError as error:
        # Said on the agent's stderr: otherwise the agent only sees a connection closed.
        print(f"ralph relay: cannot reach {path}: {error}", file=sys.stderr, flush=True)
        upstream.close()
        client.close()
        return
    splice(client, upstream)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_bridge, args=(client, path), daemon=True).start()


def _listener(route: str) -> tuple[socket.socket, str]:
    """The listening socket for ``HOST:PORT=SOCKET`` (``[::1]:PORT=...`` for IPv6)."""
    address, _, path = route.partition("=")
    host, _, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or not port.isdigit() or not path:
        raise ValueError(f"{route!r} is not HOST:PORT=SOCKET")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, int(port)), family=family, backlog=64), path
    except OSError as error:
        raise ValueError(f"cannot listen on {address}: {error.strerror or error}") from None


def _parse(args: list[str]) -> tuple[list[str], list[str]]:
    """The routes and the agent's argv."""
    if "--" not in args:
        raise ValueError("no '--' before the agent's command")
    cut = args.index("--")
    options, argv = args[:cut], args[cut + 1 :]
    flags, routes = options[::2], options[1::2]
    if not argv or len(flags) != len(routes) or set(flags) - {"--listen", "--proxy"}:
        raise ValueError("usage: relay.py (--listen|--proxy HOST:PORT=SOCKET)... -- COMMAND...")
    return routes, argv


def _run(argv: list[str]) -> int:
    """Run the agent in its own process group, passing signals on to that group; its exit
    status (``128 + N``: killed by N).

    Its own group, so that ralph stopping every process of the sandbox's group but bwrap
    (``docs/research/sandbox-design.md``, section 9) reaches the agent once, through the
    relay, and not a second time directly; forwarded with ``killpg``, so that the agent's
    children get it too, as they would without the sandbox.
    """
    child: subprocess.Popen[bytes] | None = None
    early: list[int] = []

    def forward(number: int, _frame: object) -> None:
        if child is None:
            early.append(number)  # arrived before the child existed: sent right after
        elif child.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, number)

    for forwarded in _FORWARDED:
        signal.signal(forwarded, forward)
    try:
        child = subprocess.Popen(argv, process_group=0)
    except OSError as error:
        print(f"ralph relay: cannot run {argv[0]!r}: {error}", file=sys.stderr, flush=True)
        return 126 if isinstance(error, PermissionError) else 127
    for number in early:
        forward(number, None)
    status = child.wait()
    return 128 - status if status < 0 else status


def main(args: list[str]) -> int:
    """Listen on every route, then run the agent; the exit status (see the module's text)."""
    try:
        routes, argv = _parse(args)
        listeners = [_listener(route) for route in routes]
    except ValueError as error:
        print(f"ralph relay: {error}; the agent was not started", file=sys.stderr, flush=True)
        return FAILED
    for listener, path in listeners:
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    return _run(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
