"""Who may use ``ralph serve`` (I/O at the edge of a request; no policy of the pipeline's).

- Every request must carry the server's token (another user of the machine cannot read the
  runs or steer them), in its address: every page lives under ``/t/<token>/`` (the address
  ``ralph serve`` prints), its links, forms and the script's requests relative to it.
  Scripts may send ``Authorization: Bearer <token>`` instead, on the same paths without the
  prefix. No cookie is set, and none is read: a browser sends a cookie of 127.0.0.1 to every
  port of 127.0.0.1, so a cookie would reach any server another local user, or an agent,
  starts on another port. An address goes only where a page sends it, and these pages send
  it nowhere else (links relative to the page, ``Referrer-Policy: same-origin``, a policy
  that loads nothing from another origin; see ``_serve_html``).
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
import re
from typing import Final, final

from attrs import frozen
from starlette.requests import Request

__all__ = ["PREFIX", "Access", "is_loopback", "usable_token"]

PREFIX: Final = "/t/"
"""Where the token sits in every address: ``/t/<token>/`` is the root of the pages."""

_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})

_TOKEN: Final = re.compile(r"[A-Za-z0-9._~-]{16,}")
"""A token that is one segment of an address as it is (nothing to escape, no ``/``)."""


def usable_token(token: str) -> bool:
    """Whether ``token`` can be the server's secret: 16 characters at least (none could
    guess it), each one an address keeps as it is (letters, digits, ``-._~``)."""
    return _TOKEN.fullmatch(token) is not None


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
@frozen(kw_only=True)
class Access:
    """The server's secret (its access token, and the key of its form token)."""

    secret: str
    remote: bool
    """Bound to a non-loopback address: any host name is answered (the token still guards)."""

    @property
    def form_token(self) -> str:
        """The token a page's forms carry: derived from the secret, so a saved page or a
        script that reads one gains no access token."""
        return hmac.new(self.secret.encode(), b"ralph serve form", hashlib.sha256).hexdigest()

    @property
    def root(self) -> str:
        """The path under which a browser finds the pages: ``/t/<token>``."""
        return PREFIX + self.secret

    def admitted(self, request: Request) -> str | tuple[int, str]:
        """The root ``request`` is served under (``/t/<token>``, or "" for a bearer of the
        token), or why it is refused (status and reason)."""
        host = request.url.hostname or ""
        if not self.remote and not is_loopback(host):
            return 400, f"this server answers only to a loopback host, not {host!r}"
        root = self.served_under(request)
        if root is None:
            return 401, "a token is required: open the address ralph serve printed (/t/...)"
        return root

    def served_under(self, request: Request) -> str | None:
        """The root ``request`` is served under: ``/t/<token>`` when its path starts with
        the token, "" when it brings the token as a bearer; None: it carries no token (no
        cookie or query does)."""
        path: str = request.scope["path"]
        if path.startswith(PREFIX):
            given = path[len(PREFIX) :].split("/", 1)[0]
            return self.root if _same(given, self.secret) else None
        bearer = request.headers.get("authorization", "")
        if bearer.lower().startswith("bearer ") and _same(bearer[7:], self.secret):
            return ""
        return None

    def forged(self, request: Request, form_token: str | None) -> str | None:
        """Why a changing request is refused as cross-site (None: it is the page's own)."""
        if not _same(form_token, self.form_token):
            return "the form's token is missing or wrong: reload the page"
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return f"a request from {origin!r} cannot change a run"
        return None
