"""The network gate's HTTP proxy on the wire: a client's request head read and parsed, and
the proxy's own answers (socket reads and writes; the gate in ``_network`` serves it).

An absolute-form request goes to the origin in origin form (``GET /path HTTP/1.1``) with
``Connection: close``: a client's next request on the same connection could be for another
host, and a copy after the first request would carry it to the first one.
"""

from __future__ import annotations

import socket
from typing import Final, final
from urllib.parse import urlsplit

from attrs import frozen

from pipeline.core.sandbox import Endpoint, SandboxError, parse_endpoint

__all__ = ["ProxyRequest", "parse_request", "read_head", "reply"]

_HEAD_LIMIT: Final = 65_536
_END: Final = b"\r\n\r\n"
# Hop-by-hop headers meant for the proxy, and Host: the origin gets ``Connection: close`` and
# the URL's own host (RFC 9112, 3.2.2: a Host that differs from the URL is not passed on).
_DROPPED: Final = frozenset(
    {b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive", b"host"}
)


@final
@frozen(kw_only=True)
class ProxyRequest:
    """A client's request: where to, and the bytes the origin gets first."""

    endpoint: Endpoint
    tunnel: bool
    """``CONNECT``: answer ``200`` and copy; otherwise send ``head`` to the origin first."""
    head: bytes = b""


def parse_request(head: bytes) -> ProxyRequest:
    """The request a proxy client's head (request line and headers, up to the blank line)
    makes; ``ValueError`` saying what is wrong with it."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise ValueError(f"not an HTTP/1 request line: {line[:200]!r}")
    method, target, version = parts
    try:
        if method == "CONNECT":
            return ProxyRequest(endpoint=parse_endpoint(target), tunnel=True)
        if not target.lower().startswith("http://"):
            raise ValueError(f"{method} {target[:200]}: the proxy takes CONNECT or http:// URLs")
        endpoint = parse_endpoint(target)
    except SandboxError as error:
        raise ValueError(str(error)) from None
    url = urlsplit(target)
    path = (url.path or "/") + (f"?{url.query}" if url.query else "")
    host = url.netloc.rpartition("@")[2]
    names = ((h, h.partition(b":")[0].strip().lower()) for h in rest.split(b"\r\n") if h)
    headers = [header for header, name in names if name not in _DROPPED]
    lines = [f"{method} {path} {version}\r\nHost: {host}".encode("latin-1"), *headers]
    lines.append(b"Connection: close")
    return ProxyRequest(endpoint=endpoint, tunnel=False, head=b"\r\n".join(lines) + _END)


def reply(client: socket.socket, status: int, reason: str, text: str) -> None:
    """Answer ``client`` with ``status`` and ``text``, the proxy's own words."""
    body = f"{text}\n".encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    client.sendall(head.encode() + body)


def read_head(client: socket.socket) -> tuple[bytes, bytes] | None:
    """The head up to its blank line and the bytes read after it; None: the client went
    away first. ``ValueError``: no blank line within the limit."""
    data = b""
    while _END not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError(f"no end of the request head in its first {len(data)} bytes")
        chunk = client.recv(_HEAD_LIMIT)
        if not chunk:
            return None
        data += chunk
    head, _, after = data.partition(_END)
    return head + _END, after
