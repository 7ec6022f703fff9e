"""The scripted model server speaks the Gemini API as Gemini CLI calls it: requests in, the
wire format out (whole, server-sent events, a JSON array), function calls naming the client's
own tools, usage as Google counts it, errors in Google's shape, and a slow stream."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    Script,
    Shell,
    Usage,
    WriteFile,
)
from tests.model_server._gemini import GeminiAdapter, google_status

# Gemini CLI 0.61.0's declarations of its shell and file-writing tools (descriptions shortened).
SHELL_TOOL = {
    "name": "run_shell_command",
    "description": "Runs a shell command.",
    "parametersJsonSchema": {
        "type": "object",
        "properties": {
            "command": {"type": "string"},
            "description": {"type": "string"},
            "dir_path": {"type": "string"},
            "is_background": {"type": "boolean"},
            "delay_ms": {"type": "integer"},
        },
        "required": ["command"],
    },
}
WRITE_TOOL = {
    "name": "write_file",
    "description": "Writes a file.",
    "parametersJsonSchema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
}


def body(*contents: Mapping[str, Any], tools: bool = True) -> dict[str, Any]:
    """A request body as Gemini CLI sends it."""
    request: dict[str, Any] = {
        "contents": list(contents),
        "systemInstruction": {"role": "user", "parts": [{"text": "You are a CLI agent."}]},
        "generationConfig": {"temperature": 1},
    }
    if tools:
        request["tools"] = [{"functionDeclarations": [SHELL_TOOL, WRITE_TOOL]}]
    return request


def user(text: str) -> dict[str, Any]:
    """A user turn holding ``text``."""
    return {"role": "user", "parts": [{"text": text}]}


def post(server: ModelServer, target: str, payload: Any) -> tuple[int, dict[str, str], bytes]:
    """POST ``payload`` as JSON; the status, headers (lower-case names) and whole body."""
    connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
    try:
        connection.request(
            "POST", target, orjson.dumps(payload), {"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        headers = {name.lower(): value for name, value in response.getheaders()}
        return response.status, headers, response.read()
    finally:
        connection.close()


def sse_data(raw: bytes) -> list[dict[str, Any]]:
    """The JSON of every ``data:`` line of a server-sent event stream."""
    return [
        orjson.loads(line.removeprefix(b"data: "))
        for line in raw.splitlines()
        if line.startswith(b"data: ")
    ]


@pytest.fixture
def serve() -> Iterator[Any]:
    """``serve(script)``: a running server for the test, closed after it."""
    servers: list[ModelServer] = []

    def start(script: Script) -> ModelServer:
        servers.append(ModelServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_generate_content_answers_text_with_stop_and_google_usage(serve: Any) -> None:
    """Non-streamed: one GenerateContentResponse; ``promptTokenCount`` includes the cached
    tokens, as Google counts them."""
    reply = ModelReply(
        text="Hello there, friend.",
        usage=Usage(input_tokens=100, output_tokens=20, cache_read_tokens=30, cache_write_tokens=0),
    )
    server = serve(lambda request: reply)
    status, headers, raw = post(
        server, "/v1beta/models/gemini-2.5-flash:generateContent", body(user("hi"))
    )
    assert status == 200
    assert headers["content-type"] == "application/json"
    answer = orjson.loads(raw)
    candidate = answer["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [{"text": "Hello there, friend."}]}
    assert candidate["finishReason"] == "STOP"
    usage = answer["usageMetadata"]
    assert usage["promptTokenCount"] == 130
    assert usage["cachedContentTokenCount"] == 30
    assert usage["candidatesTokenCount"] == 20
    assert usage["totalTokenCount"] == 150
    assert answer["modelVersion"] == "gemini-2.5-flash"


def test_no_cached_tokens_means_no_cached_field(serve: Any) -> None:
    """Google leaves ``cachedContentTokenCount`` out when nothing came from a cache."""
    server = serve(
        lambda request: ModelReply(text="x", usage=Usage(input_tokens=7, output_tokens=3))
    )
    _, _, raw = post(server, "/v1beta/models/m:generateContent", body(user("hi")))
    usage = orjson.loads(raw)["usageMetadata"]
    assert "cachedContentTokenCount" not in usage
    assert (usage["promptTokenCount"], usage["totalTokenCount"]) == (7, 10)


def test_alt_sse_streams_data_lines_with_usage_in_the_last(serve: Any) -> None:
    """``?alt=sse``: ``data:`` lines only (no event names), the text in pieces, finishReason
    and usage in the last chunk."""
    text = "one two three four five six seven"
    server = serve(
        lambda request: ModelReply(text=text, usage=Usage(input_tokens=11, output_tokens=5))
    )
    status, headers, raw = post(
        server, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", body(user("hi"))
    )
    assert status == 200
    assert headers["content-type"] == "text/event-stream"
    assert b"event:" not in raw
    chunks = sse_data(raw)
    assert len(chunks) > 1
    pieces = [chunk["candidates"][0]["content"]["parts"][0]["text"] for chunk in chunks]
    assert "".join(pieces) == text
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 5
    assert all("usageMetadata" not in chunk for chunk in chunks[:-1])


def test_stream_without_alt_sse_is_a_json_array(serve: Any) -> None:
    """Without ``alt=sse`` Google streams one JSON array of the same chunks."""
    server = serve(lambda request: ModelReply(text="a b c d e f", actions=(Shell("ls"),)))
    status, headers, raw = post(server, "/v1beta/models/m:streamGenerateContent", body(user("hi")))
    assert status == 200
    assert headers["content-type"] == "application/json"
    chunks = orjson.loads(raw)
    assert isinstance(chunks, list)
    assert len(chunks) > 1
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["candidates"][0]["content"]["parts"] == [
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": "ls", "description": "run a command"},
            }
        }
    ]


def test_actions_become_function_calls_of_the_clients_own_tools(serve: Any) -> None:
    """A ``WriteFile`` becomes ``write_file`` with ``file_path``, a ``Shell`` becomes
    ``run_shell_command``, in one model turn after the text; finishReason is still STOP."""
    reply = ModelReply(
        text="Fixing.", actions=(WriteFile(path="app.py", content="x = 1\n"), Shell("echo done"))
    )
    server = serve(lambda request: reply)
    _, _, raw = post(server, "/v1beta/models/m:streamGenerateContent?alt=sse", body(user("go")))
    chunks = sse_data(raw)
    parts = [part for chunk in chunks for part in chunk["candidates"][0]["content"]["parts"]]
    assert parts[0] == {"text": "Fixing."}
    assert parts[1:] == [
        {
            "functionCall": {
                "name": "write_file",
                "args": {"file_path": "app.py", "content": "x = 1\n"},
            }
        },
        {
            "functionCall": {
                "name": "run_shell_command",
                "args": {"command": "echo done", "description": "run a command"},
            }
        },
    ]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_reading_a_conversation_with_function_responses(serve: Any) -> None:
    """The user's text is the prompt (function responses left out), the turn is how many
    model turns the history holds, the last tool result is the latest functionResponse's
    ``output``, the tools and system instruction are read."""
    seen: list[ModelRequest] = []

    def script(request: ModelRequest) -> ModelReply:
        seen.append(request)
        return ModelReply(text="ok")

    server = serve(script)
    history = body(
        user("# Role: developer\nFix it."),
        {"role": "model", "parts": [{"functionCall": {"name": "write_file", "args": {}}}]},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "write_file_1",
                        "name": "write_file",
                        "response": {"output": "Successfully wrote app.py"},
                    }
                }
            ],
        },
        {"role": "model", "parts": [{"text": "thinking", "thought": True}, {"text": "Now run"}]},
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "run_shell_command",
                        "response": {"output": "Output: 42"},
                    }
                }
            ],
        },
    )
    post(server, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", history)
    (request,) = seen
    assert request.model == "gemini-2.5-pro"
    assert request.prompt == "# Role: developer\nFix it."
    assert request.turn == 2
    assert request.last_tool_result == "Output: 42"
    assert [tool.name for tool in request.tools] == ["run_shell_command", "write_file"]
    assert request.tools[1].parameters["required"] == ["file_path", "content"]
    assert request.system == "You are a CLI agent."
    assert request.stream
    assert server.exchanges[0].request is request


def test_a_tool_result_only_counts_when_the_latest_message_holds_it() -> None:
    """After a plain user message, the earlier tool result is not the last one."""
    adapter = GeminiAdapter()
    request = adapter.read(
        "/v1beta/models/m:generateContent",
        body(
            {"role": "model", "parts": [{"functionCall": {"name": "x", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "x", "response": {}}}]},
            {"role": "model", "parts": [{"text": "done"}]},
            user("and now?"),
        ),
    )
    assert request.last_tool_result is None
    assert request.turn == 2
    assert not request.stream


def test_an_error_result_is_the_tool_result() -> None:
    """A failed tool comes back as ``response.error``."""
    adapter = GeminiAdapter()
    request = adapter.read(
        "/v1beta/models/m:generateContent",
        body(
            user("go"),
            {
                "role": "user",
                "parts": [{"functionResponse": {"name": "x", "response": {"error": "denied"}}}],
            },
        ),
    )
    assert request.last_tool_result == "denied"


@pytest.mark.parametrize("target", ["generateContent", "streamGenerateContent?alt=sse"])
def test_rate_limit_in_googles_shape_with_retry_info(serve: Any, target: str) -> None:
    """A 429 is RESOURCE_EXHAUSTED with a RetryInfo detail and Retry-After, streamed or not
    (an error is never an event stream)."""
    error = ApiError(status=429, message="Quota exceeded for requests per minute", retry_after_s=7)
    server = serve(lambda request: ModelReply(error=error))
    status, headers, raw = post(server, f"/v1beta/models/m:{target}", body(user("hi")))
    assert status == 429
    assert headers["retry-after"] == "7"
    assert headers["content-type"] == "application/json"
    answer = orjson.loads(raw)["error"]
    assert answer["code"] == 429
    assert answer["status"] == "RESOURCE_EXHAUSTED"
    assert answer["message"] == "Quota exceeded for requests per minute"
    assert answer["details"] == [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
    ]


@pytest.mark.parametrize(
    ("code", "name"),
    [(500, "INTERNAL"), (503, "UNAVAILABLE"), (502, "INTERNAL"), (400, "INVALID_ARGUMENT")],
)
def test_server_errors_in_googles_shape(serve: Any, code: int, name: str) -> None:
    """A 5xx (or any error) carries the google.rpc status name of its code."""
    server = serve(lambda request: ModelReply(error=ApiError(status=code, message="it broke")))
    status, headers, raw = post(
        server, "/v1beta/models/m:streamGenerateContent?alt=sse", body(user("hi"))
    )
    assert status == code
    assert "retry-after" not in headers
    assert orjson.loads(raw) == {"error": {"code": code, "message": "it broke", "status": name}}
    assert google_status(code) == name


def test_a_slow_stream_sends_its_chunks_apart(serve: Any) -> None:
    """With ``chunk_delay_s`` each event arrives on its own, spaced in time: the first long
    before the stream ends."""
    reply = ModelReply(text="one two three four five six", chunk_delay_s=0.3)
    server = serve(lambda request: reply)
    connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
    try:
        started = time.monotonic()
        connection.request(
            "POST",
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            orjson.dumps(body(user("hi"))),
            {"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        arrivals: list[float] = []
        while line := response.readline():
            if line.startswith(b"data: "):
                arrivals.append(time.monotonic() - started)
    finally:
        connection.close()
    assert len(arrivals) == 3
    assert arrivals[-1] - arrivals[0] >= 0.5
    assert arrivals[0] < arrivals[-1] - 0.25


def test_count_tokens_answers_an_estimate(serve: Any) -> None:
    """``:countTokens`` answers ``totalTokens``, growing with the request."""
    server = serve(lambda request: ModelReply(text="unused"))
    _, _, small = post(server, "/v1beta/models/m:countTokens", {"contents": [user("hi")]})
    _, _, large = post(server, "/v1beta/models/m:countTokens", {"contents": [user("hi " * 400)]})
    assert 0 < orjson.loads(small)["totalTokens"] < orjson.loads(large)["totalTokens"]


def test_other_paths_are_not_gemini() -> None:
    """Only POSTs to a model's generate/stream/count method are the Gemini API's."""
    adapter = GeminiAdapter()
    assert adapter.handles("POST", "/v1beta/models/gemini-2.5-pro:streamGenerateContent")
    assert adapter.handles("POST", "/v1/models/x:generateContent")
    assert not adapter.handles("GET", "/v1beta/models/x:generateContent")
    assert not adapter.handles("POST", "/v1beta/models/x:embedContent")
    assert not adapter.handles("POST", "/v1/messages")
    assert not adapter.handles("POST", "/v1/chat/completions")


def test_an_unknown_method_is_recorded_as_404(serve: Any) -> None:
    """``:embedContent`` is not spoken: a 404 the test sees in the exchanges."""
    server = serve(lambda request: ModelReply(text="x"))
    status, _, _ = post(server, "/v1beta/models/m:embedContent", {"content": user("hi")})
    assert status == 404
    assert server.exchanges[-1].status == 404
