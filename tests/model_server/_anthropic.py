"""The adapter for the Anthropic Messages API, which Claude Code speaks (pure).

``POST /v1/messages`` is read into a :class:`ModelRequest` (user text, the number of assistant
messages so far, the latest ``tool_result``, the ``tools`` offered) and answered as the API
answers: one ``message`` object, or, when the request says ``"stream": true``, the server-sent
events ``message_start``, per content block ``content_block_start`` / ``content_block_delta``
(``text_delta``, ``input_json_delta``) / ``content_block_stop``, then ``message_delta`` (the
``stop_reason``: ``tool_use`` when the reply calls a tool, else ``end_turn``; the usage) and
``message_stop``. ``POST /v1/messages/count_tokens`` is answered with a rough count (the
script's reply is not used for it). An error reply becomes the API's error body
``{"type": "error", "error": {"type": ..., "message": ...}}`` with its status (429 with
``retry-after``, 529 overloaded, 5xx).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, final

import orjson

from tests.model_server._script import (
    Api,
    ApiError,
    ModelReply,
    ModelRequest,
    ToolSpec,
    WriteFile,
)
from tests.model_server._tools import concrete_call
from tests.model_server._wire import Answer, json_answer, sse_event

__all__ = ["AnthropicAdapter", "error_type"]

MESSAGES_PATH: Final = "/v1/messages"
COUNT_TOKENS_PATH: Final = "/v1/messages/count_tokens"

_ERROR_TYPES: Final[Mapping[int, str]] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_JSON_PIECE: Final = 40
"""Characters of a tool call's arguments per ``input_json_delta``: the API sends the JSON in
several pieces, so a client that only handles one whole piece fails here too."""
_TEXT_PIECE: Final = 60


def error_type(status: int) -> str:
    """The API's ``error.type`` for an HTTP status (``api_error`` for any other 5xx)."""
    return _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the ``text`` of its text blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""


def _blocks(message: Any) -> Sequence[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, list) else []


def _tool_result(message: Any) -> str | None:
    """The content of the last ``tool_result`` block of a message, if it has one."""
    results = [
        block
        for block in _blocks(message)
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    ]
    return _text_of(results[-1].get("content")) if results else None


def _tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    offered = body.get("tools")
    if not isinstance(offered, list):
        return ()
    return tuple(
        ToolSpec(name=str(tool["name"]), parameters=tool.get("input_schema") or {})
        for tool in offered
        if isinstance(tool, Mapping) and "name" in tool
    )


def _ident(prefix: str, request: ModelRequest, index: int = 0) -> str:
    """A stable id, unique within a conversation (the turn and position are in it)."""
    digest = hashlib.sha256(f"{request.prompt}\0{request.turn}\0{index}".encode()).hexdigest()
    return f"{prefix}_{request.turn:03d}{index:02d}{digest[:18]}"


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _usage(reply: ModelReply) -> dict[str, int]:
    usage = reply.usage
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
        "output_tokens": usage.output_tokens,
    }


def _calls(request: ModelRequest, reply: ModelReply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The tool calls of the reply's actions, in order.

    Claude Code's ``Write`` refuses to replace a file it has not read in this session ("File
    has not been read yet"), as a real model learns; so a file write is preceded by a ``Read``
    of the same path in the same message (Claude Code runs them in order; reading a file that
    does not exist yet is a harmless error).
    """
    for action in reply.actions:
        name, arguments = concrete_call(action, request)
        if isinstance(action, WriteFile) and name == "Write" and request.offers("Read"):
            yield "Read", {"file_path": arguments.get("file_path", action.path)}
        yield name, arguments


def _content(request: ModelRequest, reply: ModelReply) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if reply.text:
        blocks.append({"type": "text", "text": reply.text})
    for index, (name, arguments) in enumerate(_calls(request, reply)):
        blocks.append(
            {
                "type": "tool_use",
                "id": _ident("toolu", request, index),
                "name": name,
                "input": arguments,
            }
        )
    return blocks


def _stop_reason(blocks: Sequence[Mapping[str, Any]]) -> str:
    return "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"


def _error(error: ApiError) -> Answer:
    headers = {} if error.retry_after_s is None else {"retry-after": str(error.retry_after_s)}
    own = {"type": error_type(error.status), "message": error.message}
    body = {"type": "error", "error": {**own, **error.fields}}
    return json_answer(error.status, body, headers)


def _streamed(message: Mapping[str, Any], blocks: Sequence[Mapping[str, Any]]) -> Answer:
    """The server-sent events of ``message`` with its content ``blocks``, as the API streams."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events = [sse_event({"type": "message_start", "message": start}, "message_start")]
    events.append(sse_event({"type": "ping"}, "ping"))
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            pieces = _pieces(block["text"], _TEXT_PIECE)
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces]
        else:
            opening = {**block, "input": {}}
            arguments = orjson.dumps(block["input"]).decode()
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p}
                for p in _pieces(arguments, _JSON_PIECE)
            ]
        events.append(
            sse_event(
                {"type": "content_block_start", "index": index, "content_block": opening},
                "content_block_start",
            )
        )
        events.extend(
            sse_event(
                {"type": "content_block_delta", "index": index, "delta": delta},
                "content_block_delta",
            )
            for delta in deltas
        )
        events.append(
            sse_event({"type": "content_block_stop", "index": index}, "content_block_stop")
        )
    ending = {
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": usage,
    }
    events.append(sse_event(ending, "message_delta"))
    events.append(sse_event({"type": "message_stop"}, "message_stop"))
    headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
    return Answer(
        status=200,
        chunks=tuple(events),
        headers={**headers, "request-id": f"req_{message['id'][4:]}"},
    )


@final
class AnthropicAdapter:
    """Reads and answers the Anthropic Messages API (``/v1/messages``), as Claude Code uses it."""

    api = Api.ANTHROPIC

    def handles(self, method: str, path: str) -> bool:
        """``POST /v1/messages`` and its ``count_tokens`` (under any base path prefix)."""
        return method == "POST" and path.rstrip("/").endswith(MESSAGES_PATH)

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The request's content: user text without tool results, turn, last tool result."""
        raw = body.get("messages")
        messages = raw if isinstance(raw, list) else []
        users = [m for m in messages if isinstance(m, Mapping) and m.get("role") == "user"]
        prompt = "\n\n".join(text for m in users if (text := _text_of(m.get("content"))))
        turn = sum(1 for m in messages if isinstance(m, Mapping) and m.get("role") == "assistant")
        last = _tool_result(messages[-1]) if messages else None
        return ModelRequest(
            api=self.api,
            model=str(body.get("model", "")),
            prompt=prompt,
            turn=turn,
            last_tool_result=last,
            tools=_tools(body),
            system=_text_of(body.get("system")),
            # count_tokens never streams; its body may still carry the flag of the request it
            # measures.
            stream=bool(body.get("stream")) and not path.rstrip("/").endswith(COUNT_TOKENS_PATH),
            body=body,
        )

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """The reply as a ``message``, streamed when asked; an error as the API's error body."""
        if reply.error is not None:
            return _error(reply.error)
        blocks = _content(request, reply)
        message = {
            "id": _ident("msg", request, 99),
            "type": "message",
            "role": "assistant",
            "model": request.model or "scripted",
            "content": blocks,
            "stop_reason": _stop_reason(blocks),
            "stop_sequence": None,
            "usage": _usage(reply),
        }
        if request.stream:
            return _streamed(message, blocks)
        return json_answer(200, message)
