"""A network endpoint the sandbox lets an agent reach, and reading one from a URL (pure).

An endpoint is a host and a port, never a wildcard: the network gate refuses by ``host:port``
(``docs/research/sandbox-design.md``, sections 3 and 8). Base URLs of the agent CLIs
(``ANTHROPIC_BASE_URL=http://127.0.0.1:8080``) and ``allow`` entries (``pkgs.example:443``,
``[::1]:8080``) both read through :func:`parse_endpoint`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from typing import Any, Final, final
from urllib.parse import urlsplit

from attrs import Attribute, field, frozen

from pipeline.core.sandbox._paths import SandboxError

__all__ = ["DEFAULT_PORTS", "Endpoint", "parse_endpoint"]

DEFAULT_PORTS: Final = {"http": 80, "https": 443}
"""The port a URL of each scheme the agent CLIs use means when it names none."""

_LABEL: Final = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOSTNAME: Final = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_DOTTED_NUMBERS: Final = re.compile(r"[0-9.]+")
_HOST_PORT: Final = re.compile(
    r"\[(?P<v6>[^\]]*)\]:(?P<v6port>[^:]*)"
    r"|(?P<host>[^:\[\]]*):(?P<port>[^:]*)"
)
_USERINFO: Final = re.compile(r"(?<=://)[^/@]*@")


def _short_form(host: str) -> str:
    """An IPv6 address in its short form, so that equal places compare equal
    (``0:0:0:0:0:0:0:1`` is ``::1``); any other host as it is (the validator judges it)."""
    if ":" in host:
        with contextlib.suppress(ValueError):
            return ipaddress.IPv6Address(host).compressed
    return host


def _check_host(_instance: object, _attribute: Attribute[Any], value: str) -> None:
    """Refuse a host that is not a lower-case host name, IPv4 or IPv6 address."""
    if ":" in value or _DOTTED_NUMBERS.fullmatch(value):
        try:
            ipaddress.ip_address(value)  # with a colon only IPv6 parses, dotted only IPv4
        except ValueError:
            kind = "IPv6" if ":" in value else "IPv4"
            raise SandboxError(f"endpoint host {value!r} is not an {kind} address") from None
    elif len(value) > 253 or not _HOSTNAME.fullmatch(value):
        text = "is not a host name (lower-case letters, digits, '-', '_' and dots)"
        raise SandboxError(f"endpoint host {value!r} {text}")


def _check_port(_instance: object, _attribute: Attribute[Any], value: int) -> None:
    if type(value) is not int or not 1 <= value <= 65535:
        raise SandboxError(f"endpoint port must be from 1 to 65535, got {value!r}")


@final
@frozen
class Endpoint:
    """A host (a lower-case name, IPv4 or IPv6 address, no brackets, kept in its short form)
    and a TCP port."""

    host: str = field(converter=_short_form, validator=_check_host)
    port: int = field(validator=_check_port)

    def __str__(self) -> str:
        """``host:port``, with an IPv6 address in brackets (``[::1]:8080``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def is_loopback(self) -> bool:
        """Whether the endpoint is on this machine (``localhost``, ``127.0.0.0/8``, ``::1``):
        such an endpoint is relayed into the sandbox at its own address, not proxied."""
        if self.host == "localhost" or self.host.endswith(".localhost"):
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False


def _shown(text: str) -> str:
    """``text`` for an error message: a URL's user and password left out."""
    return _USERINFO.sub("", text)


def _endpoint(host: str | None, port: int, text: str) -> Endpoint:
    if not host:
        raise SandboxError(f"no host in {_shown(text)!r}")
    try:
        return Endpoint(host.lower(), port)
    except SandboxError as error:  # the type's own checks, said of the text they came from
        raise SandboxError(f"{_shown(text)!r}: {error}") from None


def _port_number(digits: str, text: str) -> int:
    if not digits.isascii() or not digits.isdigit():
        raise SandboxError(f"the port of {_shown(text)!r} is not a number: {digits!r}")
    return int(digits)


def _from_url(text: str) -> Endpoint:
    try:
        parts = urlsplit(text)
        given = parts.port  # parsed lazily: a bad port raises only here
    except ValueError as error:
        raise SandboxError(f"{_shown(text)!r} is not a URL with a valid port: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        raise SandboxError(f"the scheme of {_shown(text)!r} is not http or https")
    return _endpoint(parts.hostname, DEFAULT_PORTS[scheme] if given is None else given, text)


def parse_endpoint(text: str) -> Endpoint:
    """The endpoint a base URL (``https://api.example.com/v1``: the scheme's port when it
    names none) or a ``host:port`` entry (``[::1]:8080``: the port required) points at.

    Raises :class:`SandboxError` naming the text (without a URL's password) and what is wrong:
    no host, a port that is missing, not a number or out of range, another scheme, a host that
    is no host name or address.
    """
    if not text or any(c.isspace() for c in text):
        raise SandboxError(f"an endpoint is a URL or host:port without spaces, got {text!r}")
    if "://" in text:
        return _from_url(text)
    found = _HOST_PORT.fullmatch(text)
    if found is None:
        raise SandboxError(f"no port in {text!r}: write host:port, [IPv6]:port or a URL")
    if found["v6"] is not None:
        return _endpoint(found["v6"], _port_number(found["v6port"], text), text)
    return _endpoint(found["host"], _port_number(found["port"], text), text)
