"""The scripted model server speaks OpenAI Chat Completions as OpenCode and aider expect it:
requests read into the script's terms, answers (streamed or not) in the API's wire format."""

from __future__ import annotations

import http.client
import time
from collections.abc import Mapping
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
    ToolCall,
    Usage,
    WriteFile,
)
from tests.model_server._openai_chat import OpenAIChatAdapter

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a command",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write",
            "parameters": {
                "type": "object",
                "properties": {"filePath": {"type": "string"}, "content": {"type": "string"}},
            },
        },
    },
]
"""Two of the tools OpenCode offers, as it offers them."""

CONVERSATION = [
    {"role": "system", "content": "You are opencode."},
    {"role": "user", "content": [{"type": "text", "text": "# Role: developer\nFix it."}]},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command":"ls"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "app.py\n"},
]


def post(
    server: ModelServer, body: Mapping[str, Any], path: str = "/v1/chat/completions"
) -> tuple[int, dict[str, str], bytes]:
    """POST ``body`` and return the status, the headers (lower-case) and the whole body."""
    connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
    connection.request("POST", path, orjson.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def events(data: bytes) -> list[Any]:
    """The ``data:`` payloads of a server-sent event stream (``[DONE]`` kept as a string)."""
    found: list[Any] = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        assert block.startswith("data: "), block
        payload = block.removeprefix("data: ")
        found.append(payload if payload == "[DONE]" else orjson.loads(payload))
    return found


def replying(reply: ModelReply) -> Script:
    """A script that always answers ``reply``."""

    def script(request: ModelRequest) -> ModelReply:
        return reply

    return script


def test_the_paths_of_the_api_are_its_own() -> None:
    """``/v1/chat/completions`` and ``/chat/completions`` under any base path, POST only."""
    adapter = OpenAIChatAdapter()
    assert adapter.handles("POST", "/v1/chat/completions")
    assert adapter.handles("POST", "/chat/completions")
    assert adapter.handles("POST", "/api/openai/v1/chat/completions/")
    assert not adapter.handles("GET", "/v1/chat/completions")
    assert not adapter.handles("POST", "/v1/responses")
    assert not adapter.handles("POST", "/v1/completions")


def test_a_request_is_read_into_the_scripts_terms() -> None:
    """User text (strings and text parts), the system text, one turn per assistant message,
    the tool result that follows the last answer, the tools offered, the stream flag."""
    body = {
        "model": "scripted",
        "messages": [*CONVERSATION, {"role": "user", "content": "Go on."}],
        "tools": TOOLS,
        "stream": True,
    }
    request = OpenAIChatAdapter().read("/v1/chat/completions", body)
    assert request.model == "scripted"
    assert request.prompt == "# Role: developer\nFix it.\n\nGo on."
    assert request.system == "You are opencode."
    assert request.turn == 1
    assert request.last_tool_result == "app.py\n"
    assert [t.name for t in request.tools] == ["bash", "write"]
    assert request.stream


def test_the_older_functions_field_offers_tools_too() -> None:
    """``functions`` (before ``tools`` existed) lists tools the same way."""
    body = {"messages": [], "functions": [TOOLS[0]["function"]]}
    request = OpenAIChatAdapter().read("/chat/completions", body)
    assert [t.name for t in request.tools] == ["bash"]
    assert "command" in request.tools[0].parameters["properties"]


def test_a_tool_result_before_a_later_answer_is_not_the_last() -> None:
    """A result the model has already answered belongs to an earlier turn."""
    body = {"messages": [*CONVERSATION, {"role": "assistant", "content": "Done."}]}
    request = OpenAIChatAdapter().read("/v1/chat/completions", body)
    assert (request.turn, request.last_tool_result) == (2, None)


def test_a_non_streamed_answer_calls_the_clients_own_tools() -> None:
    """A write becomes OpenCode's ``write`` with ``filePath``, a command its ``bash``; the
    finish reason says so; usage counts cached tokens inside ``prompt_tokens``."""
    reply = ModelReply(
        text="On it.",
        actions=(WriteFile(path="app.py", content="x = 1\n"), Shell("ls")),
        usage=Usage(input_tokens=1000, output_tokens=50, cache_read_tokens=200),
    )
    with ModelServer(replying(reply)) as server:
        status, headers, data = post(
            server, {"model": "m", "messages": CONVERSATION, "tools": TOOLS}
        )
    assert status == 200
    assert headers["content-type"] == "application/json"
    body = orjson.loads(data)
    assert body["object"] == "chat.completion"
    assert body["model"] == "m"
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    message = choice["message"]
    assert message["role"] == "assistant"
    assert message["content"] == "On it."
    calls = [
        (c["function"]["name"], orjson.loads(c["function"]["arguments"]))
        for c in message["tool_calls"]
    ]
    assert calls == [
        ("write", {"filePath": "app.py", "content": "x = 1\n"}),
        ("bash", {"command": "ls", "description": "run a command"}),
    ]
    ids = [c["id"] for c in message["tool_calls"]]
    assert len(set(ids)) == 2
    assert all(c["type"] == "function" for c in message["tool_calls"])
    assert body["usage"]["prompt_tokens"] == 1200
    assert body["usage"]["completion_tokens"] == 50
    assert body["usage"]["total_tokens"] == 1250
    assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 200


def test_a_streamed_answer_is_chunks_of_deltas_then_usage_then_done() -> None:
    """Role first, the text in pieces, each call's id and name then its arguments in
    fragments, the finish reason, a usage chunk with no choices (asked for), ``[DONE]``."""
    text = "I will write the file now, then check it."
    source = "def answer():\n    return 42\n" * 3
    reply = ModelReply(
        text=text,
        actions=(WriteFile(path="src/app.py", content=source),),
        usage=Usage(input_tokens=70, output_tokens=9, cache_read_tokens=30),
    )
    body = {
        "model": "m",
        "messages": CONVERSATION,
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    with ModelServer(replying(reply)) as server:
        status, headers, data = post(server, body)
    assert status == 200
    assert headers["content-type"].startswith("text/event-stream")
    chunks = events(data)
    assert chunks[-1] == "[DONE]"
    chunks = chunks[:-1]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    *with_choices, last = chunks
    assert last["choices"] == []
    assert last["usage"]["prompt_tokens"] == 100
    assert last["usage"]["prompt_tokens_details"]["cached_tokens"] == 30
    assert all(c["usage"] is None for c in with_choices)
    deltas = [c["choices"][0]["delta"] for c in with_choices]
    assert deltas[0]["role"] == "assistant"
    content = [d["content"] for d in deltas if d.get("content")]
    assert len(content) > 1, "the text comes in pieces"
    assert "".join(content) == text
    fragments = [call for d in deltas for call in d.get("tool_calls", ())]
    head, *rest = fragments
    assert (head["index"], head["type"], head["function"]["name"]) == (0, "function", "write")
    assert head["id"].startswith("call_")
    assert len(rest) > 1, "the arguments come in fragments"
    assert all("id" not in f and f["index"] == 0 for f in rest)
    arguments = head["function"]["arguments"] + "".join(f["function"]["arguments"] for f in rest)
    assert orjson.loads(arguments) == {"filePath": "src/app.py", "content": source}
    finishes = [c["choices"][0]["finish_reason"] for c in with_choices]
    assert finishes == [None] * (len(finishes) - 1) + ["tool_calls"]


def test_a_stream_carries_usage_only_when_asked() -> None:
    """Without ``stream_options.include_usage`` no chunk has usage (as the API does); a text
    answer finishes with ``stop``."""
    with ModelServer(replying(ModelReply(text="Done."))) as server:
        _, _, data = post(server, {"model": "m", "messages": CONVERSATION, "stream": True})
    chunks = events(data)[:-1]
    assert all("usage" not in c and c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_rate_limit_is_a_429_with_retry_after_in_the_apis_error_shape() -> None:
    """OpenAI's error body (message, type, param, code) and the ``retry-after`` header."""
    reply = ModelReply(error=ApiError(status=429, message="Rate limit reached", retry_after_s=7))
    with ModelServer(replying(reply)) as server:
        status, headers, data = post(server, {"messages": CONVERSATION, "stream": True})
    assert status == 429
    assert headers["retry-after"] == "7"
    assert orjson.loads(data) == {
        "error": {
            "message": "Rate limit reached",
            "type": "requests",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }


def test_a_server_error_is_a_5xx_server_error() -> None:
    """Any other status is the API's ``server_error``, without a retry-after."""
    with ModelServer(
        replying(ModelReply(error=ApiError(status=503, message="overloaded")))
    ) as server:
        status, headers, data = post(server, {"messages": CONVERSATION})
    assert status == 503
    assert "retry-after" not in headers
    assert orjson.loads(data)["error"]["type"] == "server_error"


def test_a_slow_stream_arrives_chunk_by_chunk() -> None:
    """``chunk_delay_s`` spaces the chunks: the first arrives long before the last."""
    reply = ModelReply(text="x" * 100, chunk_delay_s=0.05)
    with ModelServer(replying(reply)) as server:
        connection = http.client.HTTPConnection(urlsplit(server.url).netloc, timeout=10)
        started = time.monotonic()
        connection.request(
            "POST", "/v1/chat/completions", orjson.dumps({"messages": [], "stream": True})
        )
        response = connection.getresponse()
        first = response.readline()
        first_at = time.monotonic() - started
        rest = response.read()
        total = time.monotonic() - started
        connection.close()
    assert first.startswith(b"data: ")
    assert len(events(first + rest)) >= 8
    assert first_at < total / 2
    assert total >= 0.05 * 7


FENCED_SYSTEM = (
    "To suggest changes to a file you MUST return the entire content of the updated file.\n"
    "You MUST use this *file listing* format:\n\n"
    "path/to/filename.js\n````\n// entire file content ...\n// ... goes in between\n````\n"
)
"""aider's whole-format reminder when a file in the chat holds a triple backtick."""


@pytest.mark.parametrize(
    ("system", "fence"), [("Act as an expert software developer.", "```"), (FENCED_SYSTEM, "````")]
)
def test_without_tools_a_write_is_a_whole_file_listing(system: str, fence: str) -> None:
    """For aider (no tools): the path on its own line, then the whole content between the
    fences its system prompt shows; a command is a plain sentence, never a fenced block."""
    reply = ModelReply(
        text="Here it is.",
        actions=(
            WriteFile(path=".agent/out/status", content="completed\nFixed."),
            Shell("make test"),
        ),
    )
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Fix it."}]
    with ModelServer(replying(reply)) as server:
        status, _, data = post(server, {"model": "openai/m", "messages": messages})
    assert status == 200
    choice = orjson.loads(data)["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in choice["message"]
    content = choice["message"]["content"]
    listing = f".agent/out/status\n{fence}\ncompleted\nFixed.\n{fence}\n"
    assert content.startswith(f"Here it is.\n\n{listing}")
    after = content.removeprefix(f"Here it is.\n\n{listing}")
    assert "make test" in after
    assert "```" not in after


def test_without_tools_a_named_tool_call_is_a_script_error() -> None:
    """A call of a named tool cannot be carried out as text: the test sees a 500."""
    reply = ModelReply(actions=(ToolCall(name="todowrite", arguments={"todos": []}),))
    with ModelServer(replying(reply)) as server:
        status, _, data = post(server, {"messages": [{"role": "user", "content": "x"}]})
    assert status == 500
    assert "todowrite" in orjson.loads(data)["error"]["message"]
