"""Where the relay inside the sandbox listens, and what each address leads to (pure).

Each loopback endpoint is relayed at its own address and port, so a base URL means the same
inside as outside; a host name (``localhost``) listens on ``127.0.0.1``, where the sandbox's
``/etc/hosts`` sends it. Everything else goes through the HTTP proxy at ``127.0.0.1:3128``, or
the next port no loopback endpoint takes.
"""

from __future__ import annotations

import ipaddress
import itertools
from collections.abc import Iterable
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import RELAY_MOUNT, Endpoint

__all__ = ["PROXY_PORT", "PROXY_SOCKET", "RELAY_FILE", "RelayRoute", "plan_routes"]

PROXY_PORT: Final = 3128
"""The proxy's port inside, unless a loopback endpoint takes it."""

PROXY_SOCKET: Final = "proxy.sock"
"""The proxy's socket in the relay folder."""

RELAY_FILE: Final = "relay.py"
"""The relay's file name in the relay folder."""


@final
@frozen(kw_only=True)
class RelayRoute:
    """A TCP address the relay listens on inside and the socket in the relay folder it
    copies each connection to."""

    host: str
    """An IPv4 or IPv6 loopback address."""
    port: int
    socket: str
    """The socket's file name in the relay folder."""
    target: Endpoint | None
    """The endpoint the socket leads to; None: the HTTP proxy."""

    @property
    def address(self) -> str:
        """``host:port``, an IPv6 host in brackets."""
        return str(Endpoint(self.host, self.port))

    def arguments(self) -> tuple[str, str]:
        """The relay's option for this route, the socket seen at ``/run/ralph``."""
        flag = "--listen" if self.target is not None else "--proxy"
        return flag, f"{self.address}={RELAY_MOUNT}/{self.socket}"


def _listen_host(endpoint: Endpoint) -> str:
    try:
        return str(ipaddress.ip_address(endpoint.host))
    except ValueError:
        return "127.0.0.1"


def _socket_name(port: int, taken: set[str]) -> str:
    """``PORT.sock``, or ``PORT-2.sock`` and on when two loopback addresses share a port."""
    name, count = f"{port}.sock", 1
    while name in taken:
        count += 1
        name = f"{port}-{count}.sock"
    return name


def plan_routes(allowed: Iterable[Endpoint], proxy: bool | None) -> tuple[RelayRoute, ...]:
    """The routes for ``allowed`` (loopback endpoints first, in order; the proxy last).

    ``proxy``: None runs the proxy when an endpoint is not loopback; True always (then what an
    agent tries elsewhere is refused and counted, not failed in its DNS); False never. Two
    endpoints listening on the same address inside (``localhost:80``, ``127.0.0.1:80``) share
    the first one's route.
    """
    endpoints = tuple(dict.fromkeys(allowed))
    routes: list[RelayRoute] = []
    for endpoint in (e for e in endpoints if e.is_loopback):
        host = _listen_host(endpoint)
        if any((r.host, r.port) == (host, endpoint.port) for r in routes):
            continue
        name = _socket_name(endpoint.port, {r.socket for r in routes})
        routes.append(RelayRoute(host=host, port=endpoint.port, socket=name, target=endpoint))
    if proxy if proxy is not None else any(not e.is_loopback for e in endpoints):
        taken = {r.port for r in routes if r.host == "127.0.0.1"}
        port = next(p for p in itertools.count(PROXY_PORT) if p not in taken)
        routes.append(RelayRoute(host="127.0.0.1", port=port, socket=PROXY_SOCKET, target=None))
    return tuple(routes)
