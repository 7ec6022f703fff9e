"""The adapter for the OpenAI Responses API, as Codex speaks it (pure).

A request is ``POST .../responses`` (``/v1/responses`` under an OpenAI-style base URL, or
``/responses`` under any other) whose ``input`` is a list of items: messages (``user``,
``developer``, ``assistant``), the model's earlier ``function_call`` / ``custom_tool_call``
items and the client's ``function_call_output`` / ``custom_tool_call_output`` results. The
reply streams as server-sent events the way the API sends them: ``response.created``,
``response.in_progress``, then per output item ``response.output_item.added``, its deltas
(``response.output_text.delta`` in a content part, ``response.function_call_arguments.delta``
/ ``.done``), ``response.output_item.done``, and last ``response.completed`` with the whole
response and its ``usage``. Without ``stream`` the same response object is one JSON body.

Usage: the script's ``input_tokens`` are tokens not read from a cache; the API counts cached
tokens inside ``input_tokens`` and again in ``input_tokens_details.cached_tokens``, so the wire
says ``input_tokens + cache_read_tokens``. The API knows no cache writes.

Errors: an :class:`ApiError` with an HTTP status answers that status with the API's error
body (``{"error": {"message", "type", "code", "param"}}``; a 429 with ``retry-after``). An
``ApiError`` with status 200 is a response that failed after it started: a ``response.failed``
event in a stream (a rate limit's message says "try again in N s", which Codex reads as the
delay), or a response object with ``status: "failed"``.

Each output item's id carries the answer it belongs to (``fc_<key>_<turn>_<n>``, call ids
likewise), so the turn of a later request is the number of distinct answers in its input
even when a client interleaves calls and their outputs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, final

import orjson

from tests.model_server._script import (
    Api,
    ApiError,
    ModelReply,
    ModelRequest,
    ToolSpec,
    Usage,
)
from tests.model_server._tools import concrete_call
from tests.model_server._wire import Answer, json_answer, sse_event

__all__ = ["OpenAIResponsesAdapter"]

_MODEL_ITEMS: Final = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "reasoning",
        "web_search_call",
        "tool_search_call",
        "image_generation_call",
    }
)
"""Input item types the model produced (besides assistant messages)."""
_RESULT_ITEMS: Final = frozenset(
    {"function_call_output", "custom_tool_call_output", "tool_search_output"}
)
"""Input item types that carry a tool's result back to the model."""
_OUR_ID: Final = re.compile(r"^(?:msg|fc|ctc|call)_([0-9a-f]+_\d+)_\d+$")
"""An output item id or call id this adapter gave: its answer is the first group."""
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
}
_DELTA_WORDS: Final = 3
"""Words per streamed text delta (the real API streams a token or a few at a time)."""


def _text_of(content: Any) -> str:
    """The text of a message's content or a tool's output: a string or a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def _items(body: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"type": "message", "role": "user", "content": raw}]
    if not isinstance(raw, Sequence):
        return []
    return [item for item in raw if isinstance(item, Mapping)]


def _is_model_item(item: Mapping[str, Any]) -> bool:
    kind = item.get("type", "message")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind in _MODEL_ITEMS


def _answer_marker(item: Mapping[str, Any]) -> str | None:
    for key in ("call_id", "id"):
        value = item.get(key)
        if isinstance(value, str) and (found := _OUR_ID.match(value)):
            return found.group(1)
    return None


def _turn(items: Iterable[Mapping[str, Any]]) -> int:
    """How many answers the input holds: items this adapter made count once per answer;
    other model items count once per run of adjacent model items."""
    answers: set[str] = set()
    group = 0
    previous_was_model = False
    for item in items:
        if _is_model_item(item):
            if not previous_was_model:
                group += 1
            answers.add(_answer_marker(item) or f"#{group}")
            previous_was_model = True
        else:
            previous_was_model = False
    return len(answers)


def _last_tool_result(items: Sequence[Mapping[str, Any]]) -> str | None:
    """The output of the newest tool result, when the input ends with results."""
    for item in reversed(items):
        kind = item.get("type", "message")
        if kind in _RESULT_ITEMS:
            return _text_of(item.get("output"))
        if not _is_model_item(item):
            return None
    return None


def _tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    """The offered tools by name; a namespace's tools are listed by their own names, each
    with its namespace."""
    found: list[ToolSpec] = []

    def add(tools: Any, namespace: str = "") -> None:
        if not isinstance(tools, Sequence):
            return
        for tool in tools:
            if not isinstance(tool, Mapping):
                continue
            if tool.get("type") == "namespace":
                add(tool.get("tools"), str(tool.get("name", "")))
            elif isinstance(tool.get("name"), str):
                parameters = tool.get("parameters")
                found.append(
                    ToolSpec(
                        name=tool["name"],
                        parameters=parameters if isinstance(parameters, Mapping) else {},
                        namespace=namespace,
                    )
                )

    add(body.get("tools"))
    return tuple(found)


def _tool_type(body: Mapping[str, Any], name: str) -> str:
    """``function`` or ``custom`` (a freeform tool such as ``apply_patch``) for tool ``name``."""

    def search(tools: Any) -> str | None:
        if not isinstance(tools, Sequence):
            return None
        for tool in tools:
            if not isinstance(tool, Mapping):
                continue
            if tool.get("type") == "namespace":
                if (inner := search(tool.get("tools"))) is not None:
                    return inner
            elif tool.get("name") == name:
                return str(tool.get("type", "function"))
        return None

    return search(body.get("tools")) or "function"


def _usage(usage: Usage) -> dict[str, Any]:
    wire_input = usage.input_tokens + usage.cache_read_tokens
    return {
        "input_tokens": wire_input,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": wire_input + usage.output_tokens,
    }


def _deltas(text: str) -> list[str]:
    words = re.findall(r"\s*\S+\s*|\s+", text)
    return [
        "".join(words[start : start + _DELTA_WORDS]) for start in range(0, len(words), _DELTA_WORDS)
    ]


def _error_body(error: ApiError) -> dict[str, Any]:
    rate_limited = error.status == 429 or error.retry_after_s is not None
    message = error.message
    if rate_limited and error.retry_after_s is not None and "try again" not in message.lower():
        # Codex reads the delay of an in-stream rate limit from the message only.
        message = f"{message} Please try again in {error.retry_after_s}s."
    if rate_limited:
        kind, code = "requests", "rate_limit_exceeded"
    elif error.status == 200:
        # A response that failed midway names its cause in ``code``, as the API does.
        kind, code = "server_error", "server_error"
    else:
        kind = _ERROR_TYPES.get(
            error.status, "server_error" if error.status >= 500 else "api_error"
        )
        code = None
    return {"message": message, "type": kind, "param": None, "code": code, **error.fields}


@final
class _Response:
    """One response being built: its id, its output items and the events that stream it."""

    def __init__(self, request: ModelRequest) -> None:
        digest = hashlib.sha256(f"{request.model}\n{request.prompt}".encode()).hexdigest()
        self.key = f"{digest[:16]}_{request.turn}"
        self.request = request
        self.events: list[bytes] = []
        self.output: list[dict[str, Any]] = []
        self._sequence = 0

    def emit(self, kind: str, **fields: Any) -> None:
        data = {"type": kind, "sequence_number": self._sequence, **fields}
        self.events.append(sse_event(data, event=kind))
        self._sequence += 1

    def envelope(self, status: str, **fields: Any) -> dict[str, Any]:
        return {
            "id": f"resp_{self.key}",
            "object": "response",
            "created_at": 0,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": self.request.model,
            "output": list(self.output),
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
            **fields,
        }

    def message(self, text: str) -> None:
        index = len(self.output)
        item_id = f"msg_{self.key}_{index}"
        item: dict[str, Any] = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        where = {"item_id": item_id, "output_index": index, "content_index": 0}
        self.emit("response.output_item.added", output_index=index, item=item)
        empty = {"type": "output_text", "text": "", "annotations": []}
        self.emit("response.content_part.added", **where, part=empty)
        for delta in _deltas(text):
            self.emit("response.output_text.delta", **where, delta=delta, logprobs=[])
        self.emit("response.output_text.done", **where, text=text, logprobs=[])
        part = {"type": "output_text", "text": text, "annotations": []}
        self.emit("response.content_part.done", **where, part=part)
        done = {**item, "status": "completed", "content": [part]}
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)

    def call(self, name: str, arguments: Mapping[str, Any]) -> None:
        index = len(self.output)
        call_id = f"call_{self.key}_{index}"
        # A namespaced tool (``mcp__ralph.emit``) is called by its own name with its namespace
        # beside it: Codex refuses a bare ``emit`` ("unsupported call: emit").
        namespace, _, name = name.rpartition(".")
        where_from = {"namespace": namespace} if namespace else {}
        if _tool_type(self.request.body, name) == "custom":
            # A freeform tool (apply_patch) takes raw text, not JSON: a ToolCall gives it as
            # its "input" argument.
            text = str(arguments.get("input", ""))
            item: dict[str, Any] = {
                "id": f"ctc_{self.key}_{index}",
                "type": "custom_tool_call",
                "status": "in_progress",
                "call_id": call_id,
                "name": name,
                "input": "",
            }
            where = {"item_id": item["id"], "output_index": index}
            self.emit("response.output_item.added", output_index=index, item=item)
            self.emit("response.custom_tool_call_input.delta", **where, delta=text)
            self.emit("response.custom_tool_call_input.done", **where, input=text)
            done = {**item, "status": "completed", "input": text}
        else:
            encoded = orjson.dumps(dict(arguments)).decode()
            item = {
                "id": f"fc_{self.key}_{index}",
                "type": "function_call",
                "status": "in_progress",
                "call_id": call_id,
                "name": name,
                **where_from,
                "arguments": "",
            }
            where = {"item_id": item["id"], "output_index": index}
            self.emit("response.output_item.added", output_index=index, item=item)
            self.emit("response.function_call_arguments.delta", **where, delta=encoded)
            self.emit("response.function_call_arguments.done", **where, arguments=encoded)
            done = {**item, "status": "completed", "arguments": encoded}
        self.emit("response.output_item.done", output_index=index, item=done)
        self.output.append(done)


@final
class OpenAIResponsesAdapter:
    """Reads and answers the OpenAI Responses API (``POST .../responses``), as Codex uses it."""

    api = Api.OPENAI_RESPONSES

    def handles(self, method: str, path: str) -> bool:
        """Whether the request is this API's: a POST to a path ending in ``/responses``."""
        return method == "POST" and path.rstrip("/").endswith("/responses")

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The request's content: user messages as the prompt, ``instructions`` and developer
        or system messages as the system text, answers counted, the last tool result."""
        items = _items(body)
        prompts: list[str] = []
        system: list[str] = []
        if isinstance(body.get("instructions"), str) and body["instructions"]:
            system.append(body["instructions"])
        for item in items:
            if item.get("type", "message") != "message":
                continue
            text = _text_of(item.get("content"))
            if item.get("role") == "user":
                prompts.append(text)
            elif item.get("role") in ("developer", "system"):
                system.append(text)
        return ModelRequest(
            api=self.api,
            model=str(body.get("model", "")),
            prompt="\n\n".join(prompts),
            turn=_turn(items),
            last_tool_result=_last_tool_result(items),
            tools=_tools(body),
            system="\n\n".join(system),
            stream=bool(body.get("stream", False)),
            body=body,
        )

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """The reply as a streamed response (or one JSON response); errors in the API's shape."""
        error = reply.error
        if error is not None and error.status != 200:
            headers = {}
            if error.retry_after_s is not None:
                headers["retry-after"] = str(error.retry_after_s)
                headers["retry-after-ms"] = str(error.retry_after_s * 1000)
            return json_answer(error.status, {"error": _error_body(error)}, headers)
        response = _Response(request)
        response.emit("response.created", response=response.envelope("in_progress"))
        response.emit("response.in_progress", response=response.envelope("in_progress"))
        if error is not None:
            failed = response.envelope("failed", error=_error_body(error))
            response.emit("response.failed", response=failed)
            if not request.stream:
                return json_answer(200, failed)
        else:
            if reply.text:
                response.message(reply.text)
            for action in reply.actions:
                response.call(*concrete_call(action, request))
            usage = _usage(reply.usage)
            completed = response.envelope("completed", usage=usage)
            response.emit("response.completed", response=completed)
            if not request.stream:
                return json_answer(200, completed)
        return Answer(
            status=200,
            chunks=tuple(response.events),
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
        )
