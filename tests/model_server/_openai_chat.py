"""The adapter for OpenAI Chat Completions, used by OpenCode and aider (pure).

``POST /v1/chat/completions`` (or ``/chat/completions`` under any base path). A request holds
``messages``: ``system`` (or ``developer``) text, ``user`` text (a string or a list of
``{"type": "text"}`` parts), ``assistant`` replies (each one a model turn, its ``tool_calls``
included) and ``tool`` messages carrying the result of one call each. The answer is a
``chat.completion`` object, or with ``"stream": true`` server-sent events of
``chat.completion.chunk`` deltas as the API sends them: the role first, the text in pieces,
each tool call as its index, id and name followed by fragments of its JSON arguments, a chunk
with the ``finish_reason`` (``tool_calls`` or ``stop``), a last chunk with ``usage`` and no
choices when ``stream_options.include_usage`` asks for it, then ``data: [DONE]``.

Usage is reported as the API does: ``prompt_tokens`` counts every token sent, those read from
the cache included (``prompt_tokens_details.cached_tokens``). The API has no field for tokens
written to a cache, so the script's ``cache_write_tokens`` are only part of ``prompt_tokens``.

A client that offers no tools (aider) edits files from the text of the answer: a ``WriteFile``
then becomes one of aider's *whole* edit format file listings (the path on its own line, then
the whole content between fences, the fence the request's system prompt shows), so aider's
preset uses ``--edit-format whole``. A ``Shell`` becomes a plain sentence naming the command:
such a client cannot run it, and a fenced block would be read as a file listing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, final

import orjson

from tests.model_server._script import (
    Action,
    Api,
    ApiError,
    ModelReply,
    ModelRequest,
    Shell,
    ToolSpec,
    Usage,
    WriteFile,
)
from tests.model_server._tools import NoToolError, concrete_call
from tests.model_server._wire import Answer, json_answer

__all__ = ["OpenAIChatAdapter", "whole_file_listing"]

_CREATED: Final = 1_700_000_000
"""A fixed creation time: answers depend on the request only."""
_TEXT_PIECE: Final = 24
_ARGUMENTS_PIECE: Final = 40
_DEFAULT_FENCE: Final = ("```", "```")
_FENCE_IN_PROMPT: Final = re.compile(
    r"^path/to/filename\.js\n(?P<open>\S+)\n.*?\n// \.\.\. goes in between\n(?P<close>\S+)$",
    re.MULTILINE | re.DOTALL,
)
"""aider's whole-format reminder, which shows the fence it parses (``` unless a file in the
chat holds one; then ```` or a tag such as <source>)."""


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        texts = (
            part.get("text")
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "input_text", None)
        )
        return "".join(text for text in texts if isinstance(text, str))
    return ""


def _tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    """The functions offered (``tools``, or the older ``functions``)."""
    functions = [t.get("function") for t in body.get("tools") or () if isinstance(t, Mapping)]
    functions += list(body.get("functions") or ())
    specs: list[ToolSpec] = []
    for function in functions:
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            specs.append(
                ToolSpec(
                    name=function["name"],
                    parameters=parameters if isinstance(parameters, Mapping) else {},
                )
            )
    return tuple(specs)


def _usage(usage: Usage) -> dict[str, Any]:
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": usage.output_tokens,
        "total_tokens": prompt + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


_ERROR_KINDS: Final = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def _error(error: ApiError) -> Answer:
    kind, code = _ERROR_KINDS.get(error.status, ("server_error", None))
    headers = {} if error.retry_after_s is None else {"retry-after": str(error.retry_after_s)}
    own = {"message": error.message, "type": kind, "param": None, "code": code}
    body = {"error": {**own, **error.fields}}
    return json_answer(error.status, body, headers)


def _fence(system: str) -> tuple[str, str]:
    found = _FENCE_IN_PROMPT.search(system)
    return (found["open"], found["close"]) if found else _DEFAULT_FENCE


def whole_file_listing(path: str, content: str, fence: tuple[str, str] = _DEFAULT_FENCE) -> str:
    """``content`` for ``path`` as a file listing of aider's *whole* edit format."""
    ending = "" if not content or content.endswith("\n") else "\n"
    return f"{path}\n{fence[0]}\n{content}{ending}{fence[1]}\n"


def _as_text(action: Action, fence: tuple[str, str]) -> str:
    if isinstance(action, WriteFile):
        return whole_file_listing(action.path, action.content, fence)
    if isinstance(action, Shell):
        return f"I would run this command, but cannot: {action.command}\n"
    raise NoToolError(f"the client offers no tools, so {action!r} cannot be carried out")


def _pieces(text: str, size: int) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


@final
class OpenAIChatAdapter:
    """Reads and answers OpenAI Chat Completions (``POST .../chat/completions``)."""

    api = Api.OPENAI_CHAT

    def handles(self, method: str, path: str) -> bool:
        """``POST`` to ``/v1/chat/completions`` or ``/chat/completions`` under a base path."""
        return method == "POST" and path.rstrip("/").endswith("/chat/completions")

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The conversation: user text, the turn, the last tool result, the tools offered."""
        messages = [m for m in body.get("messages") or () if isinstance(m, Mapping)]
        system: list[str] = []
        prompts: list[str] = []
        turn = 0
        last_tool_result: str | None = None
        for message in messages:
            role = message.get("role")
            if role in ("system", "developer"):
                system.append(_text(message.get("content")))
            elif role == "user":
                prompts.append(_text(message.get("content")))
            elif role == "assistant":
                turn += 1
                # a result belongs to the answer before it: a newer answer has not seen one yet
                last_tool_result = None
            elif role in ("tool", "function"):
                last_tool_result = _text(message.get("content"))
        return ModelRequest(
            api=self.api,
            model=str(body.get("model", "")),
            prompt="\n\n".join(p for p in prompts if p),
            turn=turn,
            last_tool_result=last_tool_result,
            tools=_tools(body),
            system="\n\n".join(s for s in system if s),
            stream=body.get("stream") is True,
            body=body,
        )

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """A ``chat.completion``, or its chunks as server-sent events when streamed."""
        if reply.error is not None:
            return _error(reply.error)
        text = reply.text
        calls: list[tuple[str, str, str]] = []
        if request.tools:
            for index, action in enumerate(reply.actions):
                name, arguments = concrete_call(action, request)
                call_id = _call_id(request, index)
                calls.append((call_id, name, orjson.dumps(arguments).decode()))
        elif reply.actions:
            fence = _fence(request.system)
            rendered = "".join(_as_text(action, fence) for action in reply.actions)
            text = f"{text}\n\n{rendered}" if text else rendered
        completion_id = "chatcmpl-" + _digest(request, "completion")
        finish = "tool_calls" if calls else "stop"
        if request.stream:
            return self._stream(request, reply, completion_id, text, calls, finish)
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text or None,
            "refusal": None,
        }
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ]
        body = {
            "id": completion_id,
            "object": "chat.completion",
            "created": _CREATED,
            "model": request.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            ],
            "usage": _usage(reply.usage),
            "system_fingerprint": "fp_ralph",
        }
        return json_answer(200, body)

    def _stream(
        self,
        request: ModelRequest,
        reply: ModelReply,
        completion_id: str,
        text: str,
        calls: list[tuple[str, str, str]],
        finish: str,
    ) -> Answer:
        options = request.body.get("stream_options")
        with_usage = isinstance(options, Mapping) and bool(options.get("include_usage"))

        def chunk(delta: Mapping[str, Any], finish_reason: str | None = None) -> bytes:
            data: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": _CREATED,
                "model": request.model,
                "system_fingerprint": "fp_ralph",
                "choices": [
                    {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
                ],
            }
            if with_usage:
                data["usage"] = None
            return _data(data)

        chunks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        chunks += [chunk({"content": piece}) for piece in _pieces(text, _TEXT_PIECE)]
        for index, (call_id, name, arguments) in enumerate(calls):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            chunks.append(chunk({"tool_calls": [head]}))
            chunks += [
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
                for piece in _pieces(arguments, _ARGUMENTS_PIECE)
            ]
        chunks.append(chunk({}, finish))
        if with_usage:
            chunks.append(
                _data(
                    {
                        "id": completion_id,
                        "object": "chat.completion.chunk",
                        "created": _CREATED,
                        "model": request.model,
                        "system_fingerprint": "fp_ralph",
                        "choices": [],
                        "usage": _usage(reply.usage),
                    }
                )
            )
        chunks.append(b"data: [DONE]\n\n")
        headers = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
        return Answer(status=200, chunks=tuple(chunks), headers=headers)


def _data(data: Any) -> bytes:
    return b"data: " + orjson.dumps(data) + b"\n\n"


def _digest(request: ModelRequest, salt: str) -> str:
    seed = f"{salt}\0{request.model}\0{request.turn}\0{request.prompt}".encode()
    return hashlib.sha256(seed).hexdigest()[:24]


def _call_id(request: ModelRequest, index: int) -> str:
    """A call id unique within the conversation (the turn is part of it)."""
    return f"call_{_digest(request, f'call {index}')}"
