"""The network gate: what a sandboxed process may reach, served from ralph's process (I/O).

Per sandboxed process, a private folder (``0700``, bound at ``/run/ralph`` inside) holds the
relay's file and one unix socket per route (``_routes``): ``PORT.sock`` copies to a loopback
endpoint, ``proxy.sock`` is an HTTP proxy (``_proxy``) that lets through only the allowed
``host:port`` pairs and counts what it refuses. Threads in ralph's process serve them until the
gate stops; the relay inside (``_relay``) turns them back into TCP addresses
(``docs/research/sandbox-design.md``, sections 3(b) and 8).
"""

from __future__ import annotations

import contextlib
import functools
import os
import selectors
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import RELAY_MOUNT, Endpoint, SandboxError
from pipeline.handlers.sandbox._connections import THREAD_NAME, Handler, NetworkSeen, Traffic
from pipeline.handlers.sandbox._proxy import serve_proxy
from pipeline.handlers.sandbox._relay import splice
from pipeline.handlers.sandbox._routes import RELAY_FILE, RelayRoute, plan_routes

__all__ = ["NO_PROXY", "NetworkGate", "NetworkSeen", "relay_source"]

NO_PROXY: Final = "localhost,127.0.0.1,::1"
"""Loopback is relayed at its own address, never through the proxy."""

_SOCKET_PATH_MAX: Final = 107  # sun_path holds 108 bytes with the closing NUL
_FOLDER_PREFIX: Final = "ralph-net-"
_FOLDER_NAME_LENGTH: Final = len(_FOLDER_PREFIX) + 8  # mkdtemp's random part
_STOP_S: Final = 2.0


def relay_source() -> str:
    """The text of the relay run inside the sandbox (``_relay.py``), to copy into its folder."""
    return resources.files(__package__).joinpath("_relay.py").read_text(encoding="utf-8")


def _private_folder(base: Path | None, longest_name: int) -> Path:
    """A new ``0700`` folder (mkdtemp's mode) whose sockets' paths fit ``sun_path``: in
    ``base``, else ``$XDG_RUNTIME_DIR`` when short enough, else ``/tmp``."""
    room = _SOCKET_PATH_MAX - _FOLDER_NAME_LENGTH - 2 - longest_name
    if base is not None:
        if len(os.fsencode(base)) > room:
            raise SandboxError(f"{base} is too long a path for the relay's unix sockets")
        return Path(tempfile.mkdtemp(prefix=_FOLDER_PREFIX, dir=base))
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    fits = runtime.startswith("/") and len(os.fsencode(runtime)) <= room
    where = runtime if fits and os.path.isdir(runtime) else "/tmp"
    return Path(tempfile.mkdtemp(prefix=_FOLDER_PREFIX, dir=where))


class NetworkGate:
    """The endpoints one sandboxed process may reach, served while the gate is open (a
    context manager: entering starts it, leaving stops it and removes its folder).

    ``aliases`` maps a host name to the address connected to instead (a test's made-up
    ``model.invalid``); ``proxy`` is :func:`plan_routes`'s choice (None: only for endpoints
    that are not loopback); ``base_dir`` is where the private folder is made.
    """

    def __init__(
        self,
        allowed: Iterable[Endpoint],
        *,
        proxy: bool | None = None,
        aliases: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
        connect_timeout_s: float = 10.0,
    ) -> None:
        endpoints = tuple(dict.fromkeys(allowed))
        self._routes = plan_routes(endpoints, proxy)
        self._base_dir = base_dir
        self._traffic = Traffic(
            frozenset(endpoints),
            {name.lower(): address for name, address in (aliases or {}).items()},
            connect_timeout_s,
        )
        self._folder: Path | None = None
        self._listeners: list[tuple[socket.socket, Handler]] = []
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._server: threading.Thread | None = None
        self._started = False

    @property
    def needs_relay(self) -> bool:
        """Whether the process needs the relay; False (nothing allowed, no proxy): the
        command runs as it is, nothing is served and no folder is made."""
        return bool(self._routes)

    @property
    def routes(self) -> tuple[RelayRoute, ...]:
        """What the relay listens on inside and where each address leads."""
        return self._routes

    @property
    def folder(self) -> Path | None:
        """The relay folder to bind at ``/run/ralph``, while the gate is open and needed."""
        return self._folder

    def relay_arguments(self, mount: str = RELAY_MOUNT) -> tuple[str, ...]:
        """The relay's options (``--listen 127.0.0.1:8080=/run/ralph/8080.sock`` and
        ``--proxy ...``), its sockets seen at ``mount``."""
        return tuple(arg for route in self._routes for arg in route.arguments(mount))

    def relay_command(
        self, python: str, argv: Sequence[str], mount: str = RELAY_MOUNT
    ) -> tuple[str, ...]:
        """``argv`` behind the relay run by the interpreter ``python`` (``-I``), or ``argv``
        itself when no relay is needed."""
        if not self.needs_relay:
            return tuple(argv)
        relay = f"{mount}/{RELAY_FILE}"
        return (python, "-I", relay, *self.relay_arguments(mount), "--", *argv)

    def environment(self) -> dict[str, str]:
        """The proxy variables for the sandboxed process; empty without the proxy."""
        proxy = next((r for r in self._routes if r.target is None), None)
        if proxy is None:
            return {}
        url = f"http://{proxy.address}"
        names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
        return {**dict.fromkeys(names, url), "NO_PROXY": NO_PROXY, "no_proxy": NO_PROXY}

    def seen(self) -> NetworkSeen:
        """What the gate saw of the process so far; read once it has ended, the connections
        it left waiting are taken and served first, so that none is missed."""
        self._settle()
        return self._traffic.seen()

    def _settle(self) -> None:
        for listener, handler in self._listeners:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:  # none waiting (or the gate is stopping)
                    break
                self._traffic.spawn(handler, client)
        self._traffic.settle(time.monotonic() + _STOP_S)

    def start(self) -> NetworkGate:
        """Make the folder, write the relay, listen on every socket and serve (once)."""
        if self._started:
            raise RuntimeError("a NetworkGate starts once")
        self._started = True
        if not self.needs_relay:
            return self
        longest = max(len(route.socket) for route in self._routes)
        self._folder = _private_folder(self._base_dir, max(longest, len(RELAY_FILE)))
        try:
            (self._folder / RELAY_FILE).write_text(relay_source(), encoding="utf-8")
            for route in self._routes:
                listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                self._listeners.append((listener, self._handler(route)))
                listener.bind(str(self._folder / route.socket))
                listener.listen(64)
                listener.setblocking(False)  # a client gone before its accept never blocks it
            self._wake = socket.socketpair()
            self._server = threading.Thread(target=self._serve, name=THREAD_NAME, daemon=True)
            self._server.start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stop serving: shut every connection down, join the threads (within a bound: one
        stuck in a connect ends on its timeout, as a daemon), close the sockets and remove
        the folder. Safe to call twice."""
        deadline = time.monotonic() + _STOP_S
        if self._wake is not None:
            with contextlib.suppress(OSError):
                self._wake[1].send(b"x")
        if self._server is not None:
            self._server.join(_STOP_S)
        self._traffic.stop(deadline)
        for listener, _ in self._listeners:
            listener.close()
        for end in self._wake or ():
            end.close()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
        self._listeners, self._wake, self._server, self._folder = [], None, None, None

    def __enter__(self) -> NetworkGate:
        """Start the gate."""
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        """Stop the gate."""
        self.stop()

    def _handler(self, route: RelayRoute) -> Handler:
        traffic, target = self._traffic, route.target

        def relay(client: socket.socket) -> None:
            assert target is not None
            try:
                origin = traffic.connect(target)
            except OSError:
                return  # the client sees its connection end: the endpoint does not answer
            splice(client, origin)

        return functools.partial(serve_proxy, traffic=traffic) if target is None else relay

    def _serve(self) -> None:
        assert self._wake is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake[0], selectors.EVENT_READ, None)
            for listener, handler in self._listeners:
                selector.register(listener, selectors.EVENT_READ, (listener, handler))
            while True:
                for key, _ in selector.select():
                    if key.data is None:
                        return
                    listener, handler = key.data
                    with contextlib.suppress(OSError):
                        client, _ = listener.accept()
                        self._traffic.spawn(handler, client)
