"""The scripted model server: an HTTP server on 127.0.0.1 answering from a script (I/O).

Built on the standard library's ``ThreadingHTTPServer``: the agent CLIs speak plain HTTP/1.1
to a base URL, streaming answers are server-sent events written chunk by chunk, and a test
needs nothing a dependency would add. Each request is routed to the adapter of its API, read
into a :class:`ModelRequest`, answered by the script, recorded, and written back in the API's
format. A request no adapter knows gets a 404 naming the path (and is recorded too), so a CLI
that calls something unexpected shows up in the test's failure.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, final

import attrs
import orjson
from attrs import frozen

from tests.model_server._script import ModelReply, ModelRequest, Script
from tests.model_server._wire import Adapter, Answer, json_answer

__all__ = ["Exchange", "ModelServer", "serve"]


@final
@frozen(kw_only=True)
class Exchange:
    """One request the server received, and what it answered (None: no adapter took it)."""

    method: str
    path: str
    body: Any
    request: ModelRequest | None
    reply: ModelReply | None
    status: int


def _default_adapters() -> tuple[Adapter, ...]:
    from tests.model_server._anthropic import AnthropicAdapter
    from tests.model_server._gemini import GeminiAdapter
    from tests.model_server._openai_chat import OpenAIChatAdapter
    from tests.model_server._openai_responses import OpenAIResponsesAdapter

    return (AnthropicAdapter(), OpenAIResponsesAdapter(), OpenAIChatAdapter(), GeminiAdapter())


@final
class ModelServer:
    """A running scripted model server; ``url`` is its base (``http://127.0.0.1:PORT``).

    ``exchanges`` lists every request in the order received. Use it as a context manager, or
    call :meth:`close`.
    """

    def __init__(
        self, script: Script, adapters: Sequence[Adapter] | None = None, port: int = 0
    ) -> None:
        self.script = script
        self.adapters = tuple(adapters) if adapters is not None else _default_adapters()
        self._lock = threading.Lock()
        self._exchanges: list[Exchange] = []
        self._http = ThreadingHTTPServer(("127.0.0.1", port), _handler_class(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The port it listens on."""
        port: int = self._http.server_address[1]
        return port

    @property
    def url(self) -> str:
        """The base URL clients are pointed at."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def exchanges(self) -> tuple[Exchange, ...]:
        """Every request so far, oldest first."""
        with self._lock:
            return tuple(self._exchanges)

    def model_requests(self) -> tuple[ModelRequest, ...]:
        """The requests an adapter read (what the script was asked), oldest first."""
        return tuple(e.request for e in self.exchanges if e.request is not None)

    def close(self) -> None:
        """Stop serving and release the port."""
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ModelServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)

    def _route(self, method: str, target: str, body: Any) -> tuple[Answer, float]:
        """The answer to one request and the delay before each of its chunks.

        ``target`` is the request's path with its query; adapters choose by the path alone
        and read the whole target (Gemini's ``?alt=sse`` chooses how to stream)."""
        path = target.partition("?")[0]
        if method == "GET" and path.rstrip("/").endswith("/models"):
            self._record(
                Exchange(method=method, path=path, body=body, request=None, reply=None, status=200)
            )
            return json_answer(200, {"object": "list", "data": [_MODEL_ENTRY]}), 0.0
        for adapter in self.adapters:
            if adapter.handles(method, path):
                request = adapter.read(target, body if isinstance(body, Mapping) else {})
                reply = self.script(request)
                answer = adapter.answer(request, reply)
                if reply.headers:
                    answer = attrs.evolve(answer, headers=_merged(answer.headers, reply.headers))
                self._record(
                    Exchange(
                        method=method,
                        path=path,
                        body=body,
                        request=request,
                        reply=reply,
                        status=answer.status,
                    )
                )
                return answer, reply.chunk_delay_s
        self._record(
            Exchange(method=method, path=path, body=body, request=None, reply=None, status=404)
        )
        message = f"the scripted model server has no API at {method} {path}"
        return json_answer(404, {"error": {"message": message, "type": "not_found"}}), 0.0


def _merged(own: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``own`` headers with ``extra`` added, one of ``extra`` replacing an ``own`` header of
    the same name in any case (HTTP header names are case-insensitive)."""
    replaced = {name.lower() for name in extra}
    return {
        **{name: value for name, value in own.items() if name.lower() not in replaced},
        **extra,
    }


_MODEL_ENTRY = {"id": "scripted", "object": "model", "created": 0, "owned_by": "ralph"}


def _handler_class(server: ModelServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the exchanges are recorded instead."""

        def do_GET(self) -> None:
            self._serve("GET", None)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            self._serve("POST", body)

        def _serve(self, method: str, body: Any) -> None:
            try:
                answer, delay = server._route(method, self.path, body)
            except Exception as error:  # a script bug must reach the test, not hang the client
                answer = json_answer(500, {"error": {"message": f"script failed: {error!r}"}})
                delay = 0.0
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                for chunk in answer.chunks:
                    if delay:
                        time.sleep(delay)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

    return _Handler


@contextlib.contextmanager
def serve(script: Script, port: int = 0) -> Iterator[ModelServer]:
    """A scripted model server for the ``with`` block."""
    server = ModelServer(script, port=port)
    try:
        yield server
    finally:
        server.close()
