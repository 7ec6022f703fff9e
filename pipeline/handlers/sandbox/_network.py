"""The network gate: what a sandboxed process may reach, served from ralph's process (I/O).

Per sandboxed process, a private folder (``0700``, bound at ``/run/ralph`` inside) holds the
relay's file and one unix socket per route (``_routes``): ``PORT.sock`` copies to a loopback
endpoint, ``proxy.sock`` is an HTTP proxy (``_proxy``) that lets through only the allowed
``host:port`` pairs and counts what it refuses. Threads in ralph's process serve them until the
gate stops; the relay inside (``_relay``) turns them back into TCP addresses
(``docs/research/sandbox-design.md``, sections 3(b) and 8).

The proxy's clients send ``CONNECT host:port HTTP/1.1`` (a tunnel, for https) or an
absolute-form request (``GET http://host:port/path HTTP/1.1``, which ``_proxy`` rewrites). An
endpoint not allowed is answered ``403`` and counted; an allowed one is connected to and then
copied both ways byte for byte.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import socket
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Final, final

import attrs
from attrs import frozen

from pipeline.core.sandbox import RELAY_MOUNT, Endpoint, SandboxError
from pipeline.handlers.sandbox._proxy import ProxyRequest, parse_request, read_head, reply
from pipeline.handlers.sandbox._relay import splice
from pipeline.handlers.sandbox._routes import RELAY_FILE, RelayRoute, plan_routes

__all__ = ["NO_PROXY", "THREAD_NAME", "NetworkGate", "NetworkSeen", "relay_source"]

THREAD_NAME: Final = "ralph network gate"
"""How every thread of a gate's name starts (a thread list then shows what they are)."""

_Handler = Callable[[socket.socket], None]
"""Serves one accepted connection (and closes it)."""

NO_PROXY: Final = "localhost,127.0.0.1,::1"
"""Loopback is relayed at its own address, never through the proxy."""

_SOCKET_PATH_MAX: Final = 107  # sun_path holds 108 bytes with the closing NUL
_FOLDER_PREFIX: Final = "ralph-net-"
_FOLDER_NAME_LENGTH: Final = len(_FOLDER_PREFIX) + 8  # mkdtemp's random part
_STOP_S: Final = 2.0
_CONNECT_S: Final = 10.0


@final
@frozen(kw_only=True)
class NetworkSeen:
    """What a sandboxed process did with the network, as its gate saw it: the connections
    ``refused``, by endpoint, and the allowed endpoints it ``asked`` for (whether they
    answered or not: an agent that never asked for its model's never reached it)."""

    refused: Mapping[Endpoint, int] = attrs.field(factory=dict)
    asked: frozenset[Endpoint] = frozenset()


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

    The gate keeps the threads serving connections and the sockets each holds, so that
    stopping can shut every socket down (which wakes a blocked ``recv``) and join every
    thread; and what the process asked for and was refused.
    """

    def __init__(
        self,
        allowed: Iterable[Endpoint],
        *,
        proxy: bool | None = None,
        aliases: Mapping[str, str] | None = None,
        base_dir: Path | None = None,
    ) -> None:
        endpoints = tuple(dict.fromkeys(allowed))
        self._routes = plan_routes(endpoints, proxy)
        self._allowed = frozenset(endpoints)
        self._aliases = {name.lower(): address for name, address in (aliases or {}).items()}
        self._base_dir = base_dir
        self._lock = threading.Lock()
        self._open: dict[threading.Thread, list[socket.socket]] = {}
        self._stopping = False
        self._refused: Counter[Endpoint] = Counter()
        self._asked: set[Endpoint] = set()
        self._folder: Path | None = None
        self._listeners: list[tuple[socket.socket, _Handler]] = []
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

    def relay_arguments(self) -> tuple[str, ...]:
        """The relay's options (``--listen 127.0.0.1:8080=/run/ralph/8080.sock`` and
        ``--proxy ...``), its sockets seen at ``/run/ralph``."""
        return tuple(arg for route in self._routes for arg in route.arguments())

    def relay_command(self, python: str, argv: Sequence[str]) -> tuple[str, ...]:
        """``argv`` behind the relay run by the interpreter ``python`` (``-I``), or ``argv``
        itself when no relay is needed."""
        if not self.needs_relay:
            return tuple(argv)
        relay = f"{RELAY_MOUNT}/{RELAY_FILE}"
        return (python, "-I", relay, *self.relay_arguments(), "--", *argv)

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
        for listener, handler in self._listeners:
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:  # none waiting (or the gate is stopping)
                    break
                self._spawn(handler, client)
        self._join(time.monotonic() + _STOP_S)
        with self._lock:
            return NetworkSeen(refused=dict(self._refused), asked=frozenset(self._asked))

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
        with self._lock:
            self._stopping = True
            held = [s for sockets in self._open.values() for s in sockets]
        for one in held:
            with contextlib.suppress(OSError):
                one.shutdown(socket.SHUT_RDWR)
        self._join(deadline)
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

    def _handler(self, route: RelayRoute) -> _Handler:
        target = route.target
        if target is None:
            return self._proxy

        def relay(client: socket.socket) -> None:
            try:
                origin = self._connect(target)
            except OSError:
                return  # the client sees its connection end: the endpoint does not answer
            splice(client, origin)

        return relay

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
                        self._spawn(handler, client)

    def _spawn(self, handler: _Handler, client: socket.socket) -> None:
        """Serve ``client`` on a new thread (closed at once when stopping)."""
        thread = threading.Thread(
            target=self._serve_one,
            args=(handler, client),
            name=f"{THREAD_NAME} connection",
            daemon=True,
        )
        with self._lock:
            if self._stopping:
                client.close()
                return
            self._open[thread] = [client]
        thread.start()

    def _serve_one(self, handler: _Handler, client: socket.socket) -> None:
        try:
            handler(client)
        finally:
            with self._lock:
                held = self._open.pop(threading.current_thread(), [])
            for held_socket in held:
                held_socket.close()

    def _join(self, deadline: float) -> None:
        """Wait until every connection served now has ended, or until ``deadline``
        (``time.monotonic``): once the process is gone, each ends as soon as its thread has
        read what the process sent."""
        with self._lock:
            threads = list(self._open)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _connect(self, endpoint: Endpoint) -> socket.socket:
        """A connection to ``endpoint`` (or to its alias's address), held by the calling
        connection's thread so that stopping shuts it down; ``OSError`` when it fails."""
        with self._lock:
            self._asked.add(endpoint)
        address = self._aliases.get(endpoint.host, endpoint.host)
        origin = socket.create_connection((address, endpoint.port), timeout=_CONNECT_S)
        origin.settimeout(None)
        with self._lock:
            sockets = self._open.get(threading.current_thread())
            if self._stopping or sockets is None:
                origin.close()
                raise OSError("the network gate is stopping")
            sockets.append(origin)
        return origin

    def _proxy(self, client: socket.socket) -> None:
        """Serve one client connection of the proxy, then close it."""
        with client:
            try:
                try:
                    read = read_head(client)
                    if read is None:
                        return
                    head, after = read
                    request = parse_request(head)
                except ValueError as error:
                    reply(client, 400, "Bad Request", f"ralph's sandbox proxy: {error}")
                    return
                if request.endpoint not in self._allowed:
                    with self._lock:
                        self._refused[request.endpoint] += 1
                    text = f"ralph's sandbox does not let this agent reach {request.endpoint}"
                    reply(client, 403, "Forbidden", text)
                    return
                self._forward(client, request, after)
            except OSError:
                return  # the client or the gate ended the connection: nothing left to tell

    def _forward(self, client: socket.socket, request: ProxyRequest, after: bytes) -> None:
        try:
            origin = self._connect(request.endpoint)
        except OSError as error:
            reply(client, 502, "Bad Gateway", f"cannot reach {request.endpoint}: {error}")
            return
        with origin:
            if request.tunnel:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                origin.sendall(request.head)
            origin.sendall(after)
            splice(client, origin)
