"""The network gate's bookkeeping: the threads serving connections and the sockets they
hold, the allowed endpoints, and what the process asked for and was refused (I/O)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Final, final

import attrs
from attrs import frozen

from pipeline.core.sandbox import Endpoint

__all__ = ["THREAD_NAME", "Handler", "NetworkSeen", "Traffic"]

THREAD_NAME: Final = "ralph network gate"
"""How every thread of a gate's name starts (a thread list then shows what they are)."""

Handler = Callable[[socket.socket], None]
"""Serves one accepted connection (and closes it)."""


@final
@frozen(kw_only=True)
class NetworkSeen:
    """What a sandboxed process did with the network, as its gate saw it: the connections
    ``refused``, by endpoint, and the allowed endpoints it ``asked`` for (whether they
    answered or not: an agent that never asked for its model's never reached it)."""

    refused: Mapping[Endpoint, int] = attrs.field(factory=dict)
    asked: frozenset[Endpoint] = frozenset()


@final
class Traffic:
    """One gate's connections and what it saw of them: the threads serving connections and
    the sockets each holds, so that stopping can shut every socket down (which wakes a
    blocked ``recv``) and join every thread; the allowed endpoints (``aliases`` maps a host
    name to the address connected to instead), the refusals and the endpoints asked for."""

    def __init__(
        self, allowed: frozenset[Endpoint], aliases: Mapping[str, str], timeout_s: float
    ) -> None:
        self._allowed = allowed
        self._aliases = aliases
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._open: dict[threading.Thread, list[socket.socket]] = {}
        self._stopping = False
        self._refused: Counter[Endpoint] = Counter()
        self._asked: set[Endpoint] = set()

    def spawn(self, handler: Handler, client: socket.socket) -> None:
        """Serve ``client`` on a new thread (closed at once when stopping)."""
        thread = threading.Thread(
            target=self._serve,
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

    def _serve(self, handler: Handler, client: socket.socket) -> None:
        try:
            handler(client)
        finally:
            with self._lock:
                held = self._open.pop(threading.current_thread(), [])
            for held_socket in held:
                held_socket.close()

    def _hold(self, held: socket.socket) -> None:
        """Shut ``held`` down with the gate (the calling thread closes it when done)."""
        with self._lock:
            sockets = self._open.get(threading.current_thread())
            if self._stopping or sockets is None:
                held.close()
                raise OSError("the network gate is stopping")
            sockets.append(held)

    def settle(self, deadline: float) -> None:
        """Wait until every connection served now has ended, or until ``deadline``
        (``time.monotonic``): once the process is gone, each ends as soon as its thread has
        read what the process sent."""
        with self._lock:
            threads = list(self._open)
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def stop(self, deadline: float) -> None:
        """Take no more connections, shut every held socket down and join the threads until
        ``deadline`` (``time.monotonic``)."""
        with self._lock:
            self._stopping = True
            held = [s for sockets in self._open.values() for s in sockets]
        for one in held:
            with contextlib.suppress(OSError):
                one.shutdown(socket.SHUT_RDWR)
        self.settle(deadline)

    def allows(self, endpoint: Endpoint) -> bool:
        """Whether ``endpoint`` is one of the allowed."""
        return endpoint in self._allowed

    def refuse(self, endpoint: Endpoint) -> None:
        """Count one refusal of ``endpoint``."""
        with self._lock:
            self._refused[endpoint] += 1

    def seen(self) -> NetworkSeen:
        """The refusals and the endpoints asked for so far."""
        with self._lock:
            return NetworkSeen(refused=dict(self._refused), asked=frozenset(self._asked))

    def connect(self, endpoint: Endpoint) -> socket.socket:
        """A connection to ``endpoint`` (or to its alias's address), held by the calling
        connection's thread so that stopping shuts it down; ``OSError`` when it fails."""
        with self._lock:
            self._asked.add(endpoint)
        address = self._aliases.get(endpoint.host, endpoint.host)
        origin = socket.create_connection((address, endpoint.port), timeout=self._timeout_s)
        origin.settimeout(None)
        self._hold(origin)
        return origin
