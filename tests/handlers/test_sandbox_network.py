"""The network gate on the host side, with real sockets: its folder and relay command line,
the loopback sockets, the proxy's allowlist and refusal counts, stopping; and the relay run as
a plain subprocess in front of it (listening on other ports: outside a sandbox the endpoint's
own port is taken by the server)."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.sandbox import Endpoint, SandboxError
from pipeline.handlers.sandbox import NO_PROXY, NetworkGate, relay_source
from pipeline.handlers.sandbox._network import THREAD_NAME
from tests.handlers.sandbox_support import (
    PYTHON,
    Origin,
    free_port,
    origin,
    python_agent,
    relay_file,
)

ALIAS = "model.invalid"
"""A host name that resolves nowhere: reached only through the gate's alias."""


@pytest.fixture
def server() -> Iterator[Origin]:
    with origin("server") as running:
        yield running


def _exchange(path: Path, request: bytes) -> bytes:
    """``request`` sent on the unix socket at ``path``, the answer read to its end."""
    with socket.socket(socket.AF_UNIX) as client:
        client.settimeout(5)
        client.connect(str(path))
        client.sendall(request)
        answer = bytearray()
        while chunk := client.recv(65536):
            answer += chunk
    return bytes(answer)


def _status(answer: bytes) -> str:
    return answer.split(b"\r\n", 1)[0].decode()


def test_with_nothing_allowed_no_relay_runs_and_nothing_is_served() -> None:
    """No endpoint and no proxy: the agent's argv is run as it is, without variables, and
    starting the gate makes no folder and no thread."""
    before = threading.active_count()
    with NetworkGate([]) as gate:
        assert not gate.needs_relay
        assert gate.relay_command(PYTHON, ["agent", "-p"]) == ("agent", "-p")
        assert (gate.relay_arguments(), gate.environment(), gate.folder) == ((), {}, None)
        assert threading.active_count() == before


def test_the_relay_listens_on_each_loopback_endpoint_s_own_address_and_the_proxy_on_3128() -> None:
    """Loopback endpoints keep their address (a name listens on 127.0.0.1; two that land on
    one address share it; one port on two addresses gets two sockets); the proxy takes
    3128 or, when a loopback endpoint has it, the next port."""
    gate = NetworkGate(
        [
            Endpoint("127.0.0.1", 8080),
            Endpoint("localhost", 8080),
            Endpoint("127.0.0.2", 8080),
            Endpoint("0:0:0:0:0:0:0:1", 9000),
            Endpoint("127.0.0.1", 3128),
            Endpoint("api.example.com", 443),
        ]
    )
    assert gate.relay_arguments() == (
        *("--listen", "127.0.0.1:8080=/run/ralph/8080.sock"),
        *("--listen", "127.0.0.2:8080=/run/ralph/8080-2.sock"),
        *("--listen", "[::1]:9000=/run/ralph/9000.sock"),
        *("--listen", "127.0.0.1:3128=/run/ralph/3128.sock"),
        *("--proxy", "127.0.0.1:3129=/run/ralph/proxy.sock"),
    )
    command = gate.relay_command("/py", ["agent"])
    assert (command[:3], command[-2:]) == (("/py", "-I", "/run/ralph/relay.py"), ("--", "agent"))


@pytest.mark.parametrize(
    ("allowed", "proxy", "proxied"),
    [
        ([Endpoint("127.0.0.1", 8080)], None, False),
        ([Endpoint("127.0.0.1", 8080), Endpoint("api.example.com", 443)], None, True),
        ([Endpoint("127.0.0.1", 8080)], True, True),
        ([], True, True),
        ([Endpoint("api.example.com", 443)], False, False),
    ],
    ids=["loopback-only", "with-a-remote-endpoint", "forced", "forced-alone", "refused"],
)
def test_the_proxy_variables_are_set_exactly_when_the_proxy_runs(
    allowed: list[Endpoint], proxy: bool | None, proxied: bool
) -> None:
    """The agent gets the proxy variables (loopback excepted) only with a proxy to use."""
    gate = NetworkGate(allowed, proxy=proxy)
    url = "http://127.0.0.1:3128"
    expected = {
        **dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"), url),
        **dict.fromkeys(("NO_PROXY", "no_proxy"), NO_PROXY),
    }
    assert gate.environment() == (expected if proxied else {})
    assert any(route.target is None for route in gate.routes) is proxied


def test_the_folder_is_private_short_holds_the_relay_and_is_removed(tmp_path: Path) -> None:
    """The folder is ``0700`` in the base given, every socket path fits ``sun_path``, the
    relay's text is there, and stopping removes it all."""
    gate = NetworkGate([Endpoint("127.0.0.1", 65535)], proxy=True, base_dir=Path("/tmp"))
    with gate:
        folder = gate.folder
        assert folder is not None
        assert folder.parent == Path("/tmp")
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        names = sorted(p.name for p in folder.iterdir())
        assert names == ["65535.sock", "proxy.sock", "relay.py"]
        assert all(len(os.fsencode(p)) < 108 for p in folder.iterdir())
        assert (folder / "relay.py").read_text() == relay_source()
    assert not folder.exists()
    assert gate.folder is None
    with pytest.raises(SandboxError, match="too long a path"):
        NetworkGate([Endpoint("127.0.0.1", 1)], base_dir=tmp_path / ("x" * 100)).start()


def test_a_loopback_socket_reaches_its_endpoint(server: Origin) -> None:
    """What is written on ``PORT.sock`` reaches the endpoint, and its answer comes back."""
    with NetworkGate([Endpoint("127.0.0.1", server.port)]) as gate:
        assert gate.folder is not None
        assert gate.seen().asked == frozenset()
        answer = _exchange(gate.folder / f"{server.port}.sock", b"GET /direct HTTP/1.0\r\n\r\n")
        assert gate.seen().asked == {Endpoint("127.0.0.1", server.port)}
    assert _status(answer) == "HTTP/1.0 200 OK"
    assert answer.endswith(b"GET /direct from server")


def test_a_connect_to_an_allowed_endpoint_opens_a_tunnel(server: Origin) -> None:
    """``CONNECT`` to a listed ``host:port`` is answered 200, then bytes pass both ways."""
    with NetworkGate([Endpoint("127.0.0.1", server.port)], proxy=True) as gate:
        assert gate.folder is not None
        request = (
            f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\nHost: x\r\n\r\n"
            "GET /tunnelled HTTP/1.0\r\n\r\n"
        )
        answer = _exchange(gate.folder / "proxy.sock", request.encode())
        assert gate.seen().refused == {}
        assert gate.seen().asked == {Endpoint("127.0.0.1", server.port)}
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.0 200 OK")
    assert answer.endswith(b"GET /tunnelled from server")


def test_a_connect_to_a_port_not_listed_is_refused_with_403_and_counted(server: Origin) -> None:
    """Each refused ``CONNECT`` is answered 403 naming the endpoint and counted per
    endpoint (an IPv6 address in any spelling is one endpoint); the server sees nothing."""
    other = free_port()
    with NetworkGate([Endpoint("127.0.0.1", server.port)], proxy=True) as gate:
        assert gate.folder is not None
        proxy = gate.folder / "proxy.sock"
        targets = (f"127.0.0.1:{other}", f"127.0.0.1:{other}", "[0::1]:443", "[::1]:443")
        answers = [_exchange(proxy, f"CONNECT {t} HTTP/1.1\r\n\r\n".encode()) for t in targets]
        assert {_status(answer) for answer in answers} == {"HTTP/1.1 403 Forbidden"}
        assert answers[0].endswith(f"reach 127.0.0.1:{other}\n".encode())
        assert answers[2].endswith(b"reach [::1]:443\n")
        assert gate.seen().refused == {Endpoint("127.0.0.1", other): 2, Endpoint("::1", 443): 2}
        assert gate.seen().asked == frozenset()  # a refusal is no endpoint asked for
    assert server.seen == []


def test_an_absolute_form_request_goes_to_the_origin_in_origin_form(server: Origin) -> None:
    """``POST http://model.invalid:PORT/v1?x=1`` reaches the aliased server as ``POST
    /v1?x=1`` with its body, the URL's Host (not the one the client sent), ``Connection:
    close`` and no proxy header."""
    allowed = [Endpoint(ALIAS, server.port)]
    with NetworkGate(allowed, aliases={ALIAS: "127.0.0.1"}) as gate:
        assert gate.folder is not None
        request = (
            f"POST http://{ALIAS}:{server.port}/v1?x=1 HTTP/1.1\r\n"
            "Host: elsewhere.example\r\nProxy-Connection: keep-alive\r\n"
            "Connection: keep-alive\r\nContent-Length: 5\r\n\r\nhello"
        )
        answer = _exchange(gate.folder / "proxy.sock", request.encode())
    assert answer.endswith(b"POST /v1?x=1 from serverhello")
    (seen,) = server.seen
    assert (seen.path, seen.body, seen.headers["Host"]) == (
        "/v1?x=1",
        b"hello",
        f"{ALIAS}:{server.port}",
    )
    assert seen.headers["Connection"] == "close"
    assert "Proxy-Connection" not in seen.headers


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        ("GET http://127.0.0.1:{other}/ HTTP/1.1\r\n\r\n", "403 Forbidden"),
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "400 Bad Request"),
        ("GET https://127.0.0.1:{port}/ HTTP/1.1\r\n\r\n", "400 Bad Request"),
        ("CONNECT no-port HTTP/1.1\r\n\r\n", "400 Bad Request"),
        ("HELLO\r\n\r\n", "400 Bad Request"),
        ("CONNECT 127.0.0.1:{closed} HTTP/1.1\r\n\r\n", "502 Bad Gateway"),
    ],
    ids=[
        "not-listed",
        "origin-form",
        "https-url",
        "no-port",
        "not-http",
        "nobody-listens",
    ],
)
def test_what_the_proxy_cannot_serve_gets_an_answer_that_says_why(
    server: Origin, request_head: str, status: str
) -> None:
    """A request not listed is 403, one the proxy cannot read 400 (not counted), an allowed
    endpoint that does not answer 502."""
    closed = free_port()
    allowed = [Endpoint("127.0.0.1", server.port), Endpoint("127.0.0.1", closed)]
    with NetworkGate(allowed, proxy=True) as gate:
        assert gate.folder is not None
        text = request_head.format(port=server.port, other=free_port(), closed=closed)
        answer = _exchange(gate.folder / "proxy.sock", text.encode())
        assert _status(answer) == f"HTTP/1.1 {status}"
        assert sum(gate.seen().refused.values()) == (status == "403 Forbidden")
    assert server.seen == []


def test_a_request_head_over_64_kib_is_400(server: Origin) -> None:
    """A head with no end in its first 64 KiB is refused (400), never passed on."""
    with NetworkGate([Endpoint("127.0.0.1", server.port)], proxy=True) as gate:
        assert gate.folder is not None
        line = f"GET http://127.0.0.1:{server.port}/ HTTP/1.1\r\nX: ".encode()
        # one byte over the limit and no more: the proxy reads it all before it answers
        answer = _exchange(gate.folder / "proxy.sock", line + b"y" * (65_537 - len(line)))
    assert _status(answer) == "HTTP/1.1 400 Bad Request"
    assert b"no end of the request head" in answer
    assert server.seen == []


def test_stopping_ends_open_connections_joins_the_threads_and_removes_the_folder(
    server: Origin,
) -> None:
    """An idle tunnel and an idle loopback connection do not hold the gate: stopping shuts
    them down (their clients read the end) and joins every thread at once."""
    gate = NetworkGate([Endpoint("127.0.0.1", server.port)], proxy=True).start()
    assert gate.folder is not None
    folder = gate.folder
    clients = [socket.socket(socket.AF_UNIX) for _ in range(2)]
    clients[0].connect(str(folder / f"{server.port}.sock"))
    clients[1].connect(str(folder / "proxy.sock"))
    clients[1].sendall(f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\n\r\n".encode())
    assert clients[1].recv(100).startswith(b"HTTP/1.1 200")
    gate.stop()
    # Joined by the stop itself, while the clients still hold their ends open: a thread the
    # stop left waiting on an idle connection would still be alive here (not a time, which a
    # loaded machine stretches: the stop's bound is 2 s a thread, at once is milliseconds).
    assert [t.name for t in threading.enumerate() if t.name.startswith(THREAD_NAME)] == []
    for client in clients:
        client.settimeout(30)
        assert client.recv(100) == b""
        client.close()
    assert not folder.exists()
    gate.stop()  # a second stop is harmless


def test_the_relay_as_a_subprocess_reaches_the_gate_s_endpoints(
    server: Origin, tmp_path: Path
) -> None:
    """End to end without a sandbox: the relay, listening on free ports, copies to the gate's
    sockets; a direct request and one through the proxy to an aliased name both arrive."""
    allowed = [Endpoint("127.0.0.1", server.port), Endpoint(ALIAS, server.port)]
    with NetworkGate(allowed, aliases={ALIAS: "127.0.0.1"}) as gate:
        assert gate.folder is not None
        direct, proxy = free_port(), free_port()
        routes = [
            *("--listen", f"127.0.0.1:{direct}={gate.folder}/{server.port}.sock"),
            *("--proxy", f"127.0.0.1:{proxy}={gate.folder}/proxy.sock"),
        ]
        script = f"""
import urllib.request
print(urllib.request.urlopen("http://127.0.0.1:{direct}/direct", timeout=5).read().decode())
print(urllib.request.urlopen("http://{ALIAS}:{server.port}/proxied", timeout=5).read().decode())
"""
        env = {"PATH": os.environ["PATH"], **gate.environment()}
        env["HTTP_PROXY"] = env["http_proxy"] = f"http://127.0.0.1:{proxy}"
        agent = [PYTHON, "-I", str(relay_file(tmp_path)), *routes, "--", *python_agent(script)]
        done = subprocess.run(agent, env=env, capture_output=True, text=True, timeout=10)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "GET /direct from server\nGET /proxied from server\n"
