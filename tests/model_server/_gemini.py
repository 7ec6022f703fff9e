"""The adapter for the Gemini API, as Gemini CLI calls it (pure).

``POST /v1beta/models/{model}:generateContent`` answers one ``GenerateContentResponse``;
``:streamGenerateContent?alt=sse`` streams one as server-sent events (``data:`` lines only, no
event names), and without ``alt=sse`` as a JSON array written element by element;
``:countTokens`` answers ``{"totalTokens": N}`` estimated from the request's size (the script
is asked too, as for every request the server takes, but its reply is not used).

A conversation is ``contents``: ``user`` turns hold text and the results of the model's
function calls (``functionResponse`` parts), ``model`` turns hold text and ``functionCall``
parts. The reply's actions become ``functionCall`` parts naming the client's own tools
(``run_shell_command``, ``write_file``); the answer ends with ``finishReason: STOP`` (also
after function calls, as the real API does) and ``usageMetadata``, whose
``promptTokenCount`` includes the cached tokens (``cachedContentTokenCount``), as Google
counts them. Errors have Google's shape: ``{"error": {"code", "message", "status"}}``, a 429
with a ``RetryInfo`` detail and a ``Retry-After`` header.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, final
from urllib.parse import parse_qs

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

__all__ = ["GeminiAdapter", "google_status"]

_PATH: Final = re.compile(
    r"^/(?:v1|v1beta|v1alpha)/models/(?P<model>[^/:]+):"
    r"(?P<method>generateContent|streamGenerateContent|countTokens)$"
)

_STATUS_NAMES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}

_ROUTE: Final = "_gemini_route"
"""The key under which :meth:`GeminiAdapter.read` keeps, in the request's ``body``, which
method was called and whether ``alt=sse`` asked for server-sent events."""

_TEXT_PIECES: Final = 3
"""A streamed text is cut into up to this many chunks, so a client sees text arrive in parts."""


def google_status(code: int) -> str:
    """The ``google.rpc.Code`` name Google's APIs give an HTTP status (``429``:
    ``RESOURCE_EXHAUSTED``)."""
    if code in _STATUS_NAMES:
        return _STATUS_NAMES[code]
    return "INTERNAL" if code >= 500 else "UNKNOWN"


def _parts(content: Any) -> Sequence[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return ()
    return [part for part in parts if isinstance(part, Mapping)]


def _texts(content: Any) -> list[str]:
    """The text parts of ``content`` that are not the model's thoughts."""
    return [
        part["text"]
        for part in _parts(content)
        if isinstance(part.get("text"), str) and not part.get("thought")
    ]


def _tool_result(response: Any) -> str:
    """The text of a ``functionResponse.response``: Gemini CLI puts a tool's output under
    ``output`` (or ``error``); anything else is given as JSON."""
    if isinstance(response, Mapping):
        for key in ("output", "error", "content", "result"):
            if isinstance(response.get(key), str):
                return str(response[key])
    if isinstance(response, str):
        return response
    return orjson.dumps(response).decode()


def _tools(body: Mapping[str, Any]) -> tuple[ToolSpec, ...]:
    specs: list[ToolSpec] = []
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        declarations = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
        for declaration in declarations if isinstance(declarations, list) else ():
            if not isinstance(declaration, Mapping) or not isinstance(declaration.get("name"), str):
                continue
            # Gemini CLI sends JSON Schema as ``parametersJsonSchema``; older clients send
            # the OpenAPI subset as ``parameters``.
            schema = declaration.get("parametersJsonSchema", declaration.get("parameters"))
            specs.append(
                ToolSpec(
                    name=declaration["name"],
                    parameters=schema if isinstance(schema, Mapping) else {},
                )
            )
    return tuple(specs)


def _system(body: Mapping[str, Any]) -> str:
    instruction = body.get("systemInstruction", body.get("system_instruction"))
    if isinstance(instruction, str):
        return instruction
    return "\n".join(_texts(instruction))


def _usage_metadata(usage: Usage) -> dict[str, Any]:
    """Google counts cached tokens inside ``promptTokenCount``; a cache write has no field
    of its own in a response (caches are made through another API), so it is not shown."""
    prompt = usage.input_tokens + usage.cache_read_tokens
    metadata: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": prompt + usage.output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if usage.cache_read_tokens:
        metadata["cachedContentTokenCount"] = usage.cache_read_tokens
        metadata["cacheTokensDetails"] = [
            {"modality": "TEXT", "tokenCount": usage.cache_read_tokens}
        ]
    return metadata


def _error(error: ApiError) -> Answer:
    body: dict[str, Any] = {
        "code": error.status,
        "message": error.message,
        "status": google_status(error.status),
    }
    headers: dict[str, str] = {}
    if error.retry_after_s is not None:
        body["details"] = [
            {
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": f"{error.retry_after_s}s",
            }
        ]
        headers["Retry-After"] = str(error.retry_after_s)
    return json_answer(error.status, {"error": {**body, **error.fields}}, headers)


def _pieces(text: str) -> list[str]:
    """``text`` cut at word boundaries into at most ``_TEXT_PIECES`` non-empty pieces."""
    if not text:
        return []
    words = re.findall(r"\S+\s*|\s+", text)
    size = -(-len(words) // _TEXT_PIECES)
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


@final
class GeminiAdapter:
    """Reads and answers the Gemini API (``:generateContent``, ``:streamGenerateContent``,
    ``:countTokens``), as Gemini CLI calls it."""

    api = Api.GEMINI

    def handles(self, method: str, path: str) -> bool:
        """Whether the request is this API's: a POST to ``/v1beta/models/{model}:{method}``."""
        return method == "POST" and _PATH.match(path) is not None

    def read(self, path: str, body: Mapping[str, Any]) -> ModelRequest:
        """The request's content; ``path`` may carry the query (``?alt=sse`` chooses SSE)."""
        route, _, query = path.partition("?")
        matched = _PATH.match(route)
        model = matched.group("model") if matched else ""
        method = matched.group("method") if matched else "generateContent"
        if method == "countTokens" and isinstance(body.get("generateContentRequest"), Mapping):
            body = body["generateContentRequest"]
        raw_contents = body.get("contents")
        contents = (
            [c for c in raw_contents if isinstance(c, Mapping)]
            if isinstance(raw_contents, list)
            else []
        )
        prompt: list[str] = []
        turn = 0
        for content in contents:
            if content.get("role") == "model":
                turn += 1
            else:
                prompt.extend(_texts(content))
        last_tool_result: str | None = None
        if contents and contents[-1].get("role") != "model":
            results = [
                p["functionResponse"] for p in _parts(contents[-1]) if "functionResponse" in p
            ]
            if results and isinstance(results[-1], Mapping):
                last_tool_result = _tool_result(results[-1].get("response"))
        sse = "sse" in parse_qs(query).get("alt", [])
        return ModelRequest(
            api=self.api,
            model=model,
            prompt="\n\n".join(prompt),
            turn=turn,
            last_tool_result=last_tool_result,
            tools=_tools(body),
            system=_system(body),
            stream=method == "streamGenerateContent",
            body={**body, _ROUTE: {"method": method, "sse": sse}},
        )

    def answer(self, request: ModelRequest, reply: ModelReply) -> Answer:
        """The reply as a ``GenerateContentResponse``: whole, as SSE chunks, or as a JSON
        array of chunks; an error in Google's error shape."""
        route = request.body.get(_ROUTE, {})
        if route.get("method") == "countTokens":
            size = len(orjson.dumps({k: v for k, v in request.body.items() if k != _ROUTE}))
            return json_answer(200, {"totalTokens": max(1, size // 4)})
        if reply.error is not None:
            return _error(reply.error)
        chunks = self._chunks(request, reply)
        if not request.stream:
            whole = self._merge(chunks)
            return json_answer(200, whole)
        if route.get("sse"):
            return Answer(
                status=200,
                chunks=tuple(sse_event(chunk) for chunk in chunks),
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
            )
        # Without alt=sse Google streams one JSON array, element by element.
        pieces = [
            (b"[" if i == 0 else b",\r\n") + orjson.dumps(chunk) for i, chunk in enumerate(chunks)
        ]
        pieces[-1] += b"]"
        return Answer(
            status=200, chunks=tuple(pieces), headers={"Content-Type": "application/json"}
        )

    def _chunks(self, request: ModelRequest, reply: ModelReply) -> list[dict[str, Any]]:
        """The streamed chunks: text in pieces, then the function calls, then the finish
        reason and usage in the last chunk."""
        parts: list[list[dict[str, Any]]] = [[{"text": piece}] for piece in _pieces(reply.text)]
        calls: list[dict[str, Any]] = []
        for action in reply.actions:
            name, arguments = concrete_call(action, request)
            calls.append({"functionCall": {"name": name, "args": arguments}})
        if calls:
            parts.append(calls)
        if not parts:
            parts.append([{"text": ""}])
        response_id = f"ralph-{request.turn}-{len(request.prompt)}"
        chunks: list[dict[str, Any]] = []
        for i, chunk_parts in enumerate(parts):
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": chunk_parts},
                "index": 0,
            }
            chunk: dict[str, Any] = {"candidates": [candidate]}
            if i == len(parts) - 1:
                candidate["finishReason"] = "STOP"
                chunk["usageMetadata"] = _usage_metadata(reply.usage)
            chunk["modelVersion"] = request.model
            chunk["responseId"] = response_id
            chunks.append(chunk)
        return chunks

    @staticmethod
    def _merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
        """One response holding every chunk's parts (the non-streamed answer)."""
        last = chunks[-1]
        parts: list[Any] = []
        for chunk in chunks:
            parts.extend(chunk["candidates"][0]["content"]["parts"])
        text = "".join(p["text"] for p in parts if "text" in p)
        merged = ([{"text": text}] if text else []) + [p for p in parts if "text" not in p]
        merged = merged or [{"text": ""}]
        candidate = {**last["candidates"][0], "content": {"role": "model", "parts": merged}}
        return {**last, "candidates": [candidate]}
