"""Endpoints read from base URLs and ``host:port`` entries: what each form means, the errors
that name what is wrong, and a round trip over generated URLs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import endpoints
from pipeline.core.sandbox import Endpoint, SandboxError, parse_endpoint


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://api.anthropic.com", Endpoint("api.anthropic.com", 443)),
        ("http://127.0.0.1:18765/v1", Endpoint("127.0.0.1", 18765)),
        ("HTTPS://API.Example.COM/v1/", Endpoint("api.example.com", 443)),
        ("http://model.invalid", Endpoint("model.invalid", 80)),
        ("http://[::1]:8080/x?y=1#z", Endpoint("::1", 8080)),
        ("http://user:pass@proxy.local:3128", Endpoint("proxy.local", 3128)),
        ("pkgs.example:443", Endpoint("pkgs.example", 443)),
        ("[::1]:8080", Endpoint("::1", 8080)),
        ("10.0.0.2:5432", Endpoint("10.0.0.2", 5432)),
    ],
)
def test_each_form_names_its_host_and_port(text: str, expected: Endpoint) -> None:
    """A URL's port defaults by scheme; a ``host:port`` entry names both; hosts are lower-cased
    and an IPv6 address loses its brackets."""
    assert parse_endpoint(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("pkgs.example", "no port in 'pkgs.example'"),
        ("pkgs.example:", "is not a number"),
        ("pkgs.example:https", "is not a number"),
        ("http://", "no host"),
        ("ftp://files.example", "is not http or https"),
        ("http://x.example:99999", "not a URL with a valid port"),
        ("http://x.example:0", "from 1 to 65535"),
        ("x.example:0", "from 1 to 65535"),
        ("http://bad host/", "without spaces"),
        ("", "without spaces"),
        ("http://-bad-.example", "is not a host name"),
        ("http://999.1.1.1", "is not an IPv4 address"),
        ("[zz::1]:80", "is not an IPv6 address"),
    ],
)
def test_a_bad_endpoint_is_named_with_what_is_wrong(text: str, message: str) -> None:
    """Every refusal is a SandboxError (a ValueError) saying what is wrong with the text."""
    with pytest.raises(SandboxError, match=message):
        parse_endpoint(text)
    assert issubclass(SandboxError, ValueError)


def test_an_error_never_shows_a_urls_password() -> None:
    """A base URL may carry credentials: the message names the URL without them."""
    with pytest.raises(SandboxError) as caught:
        parse_endpoint("http://me:hunter2secret@host.example:port/")
    assert "hunter2secret" not in str(caught.value)
    assert "host.example" in str(caught.value)


@pytest.mark.parametrize(
    ("host", "port"), [("Upper.example", 1), ("x.example", 0), ("x.example", 70000), ("", 1)]
)
def test_an_endpoint_keeps_its_bounds(host: str, port: int) -> None:
    """The type itself refuses an upper-case or empty host and a port out of range."""
    with pytest.raises(SandboxError):
        Endpoint(host, port)


def test_an_ipv6_endpoint_is_kept_in_its_short_form() -> None:
    """One place is one endpoint: an IPv6 address written out in full equals its short form,
    so the gate allows, counts and relays it as one."""
    assert Endpoint("0:0:0:0:0:0:0:1", 80) == Endpoint("::1", 80)
    assert parse_endpoint("[0:0::0:1]:80") == parse_endpoint("http://[::1]") == Endpoint("::1", 80)
    assert str(Endpoint("FE80:0::1", 443)) == "[fe80::1]:443"


def test_loopback_endpoints_are_told_apart() -> None:
    """Loopback endpoints are relayed, the rest proxied (section 8)."""
    loopback = ["localhost:80", "127.0.0.1:1", "127.9.9.9:2", "[::1]:3", "a.localhost:4"]
    assert all(parse_endpoint(text).is_loopback for text in loopback)
    assert not any(
        parse_endpoint(text).is_loopback for text in ["api.anthropic.com:443", "10.0.0.1:5"]
    )


@given(
    endpoints(),
    st.sampled_from(["http", "https"]),
    st.booleans(),
    st.sampled_from(["", "/", "/v1/x?q=1"]),
)
def test_a_generated_url_round_trips(
    endpoint: Endpoint, scheme: str, explicit: bool, path: str
) -> None:
    """The endpoint of a URL built from an endpoint is that endpoint, with the port written
    out or left to the scheme's default."""
    default = {"http": 80, "https": 443}[scheme]
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    port = f":{endpoint.port}" if explicit or endpoint.port != default else ""
    url = f"{scheme}://{host}{port}{path}"
    assert parse_endpoint(url) == endpoint


@given(endpoints())
def test_an_endpoint_reads_back_from_its_text(endpoint: Endpoint) -> None:
    """``str(endpoint)`` is an ``allow`` entry that reads back as the same endpoint."""
    assert parse_endpoint(str(endpoint)) == endpoint
