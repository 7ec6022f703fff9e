"""Who may use ``ralph serve`` (I/O at the edge of a request; no policy of the pipeline's).

- Every request must carry the server's token (another user of the machine cannot read the
  runs or steer them): once as ``?token=`` (the address ``ralph serve`` prints), after which an
  HttpOnly cookie holds it and the address drops it, or as ``Authorization: Bearer``.
- Bound to a loopback address (the default), only requests naming a loopback host are
  served (a page elsewhere cannot rebind a name to 127.0.0.1).
- A request that changes something (a form's POST) must carry the page's form token (derived
  from the secret, never the secret itself) and, when the browser names its origin, come from
  the server's own: another site cannot make a person's browser guide or answer a run.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
from typing import Final, final

from attrs import frozen
from starlette.requests import Request

__all__ = ["TOKEN_COOKIE", "Access", "is_loopback"]

TOKEN_COOKIE: Final = "ralph_token"
"""The cookie that keeps the access token after the first visit with ``?token=``."""

_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, without a port) is this machine's own."""
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _same(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


@final
@frozen
class Access:
    """The server's secret (its form token, and its access token when ``remote``)."""

    secret: str
    remote: bool
    """Bound to a non-loopback address: any host name is answered (the token still guards)."""

    @property
    def form_token(self) -> str:
        """The token a page's forms carry: derived from the secret, so a saved page or a
        script that reads one gains no access token."""
        return hmac.new(self.secret.encode(), b"ralph serve form", hashlib.sha256).hexdigest()

    def refusal(self, request: Request) -> tuple[int, str] | None:
        """Why ``request`` is not served (status and reason), or None."""
        host = request.url.hostname or ""
        if not self.remote and not is_loopback(host):
            return 400, f"this server answers only to a loopback host, not {host!r}"
        if not self.carries_token(request):
            return 401, "a token is required: open the address ralph serve printed"
        return None

    def carries_token(self, request: Request) -> bool:
        """Whether ``request`` carries the access token (query, cookie or bearer)."""
        bearer = request.headers.get("authorization", "")
        given = (
            request.query_params.get("token")
            or request.cookies.get(TOKEN_COOKIE)
            or (bearer[7:] if bearer.lower().startswith("bearer ") else None)
        )
        return _same(given, self.secret)

    def forged(self, request: Request, form_token: str | None) -> str | None:
        """Why a changing request is refused as cross-site (None: it is the page's own)."""
        if not _same(form_token, self.form_token):
            return "the form's token is missing or wrong: reload the page"
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return f"a request from {origin!r} cannot change a run"
        return None
