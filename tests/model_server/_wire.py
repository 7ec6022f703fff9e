"""What every API adapter shares: the answer it produces and the adapter protocol (pure).

An adapter reads one API's request body into a :class:`ModelRequest` and turns the script's
:class:`ModelReply` into that API's answer: a status, headers and the body as chunks, which the
server writes one by one (a streamed answer is server-sent events, one chunk per event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, final

import orjson
from attrs import field, frozen

from tests.model_server._script import Api, ModelReply, ModelRequest

__all__ = ["Adapter", "Answer", "json_answer", "sse_event"]


@final
@frozen(kw_only=True)
class Answer:
    """An HTTP answer: ``chunks`` are written in order, flushed one at a time."""

    status: int
    chunks: tuple[bytes, ...]
    headers: Mapping[str, str] = field(factory=dict)


def json_answer(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Answer:
    """A JSON answer in one chunk."""
    return Answer(
        status=status,
        chunks=(orjson.dumps(body),),
        headers={"Content-Type": "application/json", **(headers or {})},
    )


def sse_event(data: Any, event: str | None = None) -> bytes:
    """One server-sent event carrying ``data`` as JSON (and its ``event:`` name, if any)."""
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + orjson.dumps(data) + b"\n\n"


class Adapter(Protocol):
    """One API: which requests are its own, how to read them, how to answer."""

    api: Api

    def handles(self, method: str, path: str) -> bool:
        """Whether a request to ``path`` (query string removed) belongs to this API."""
        ...

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The request's content, independent of the API; ``path`` keeps its query string
        (``?alt=sse``), which some APIs read."""
        ...

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """The script's reply in this API's format (streamed when the request asked for it);
        ``reply.error`` becomes this API's error body with its status."""
        ...
