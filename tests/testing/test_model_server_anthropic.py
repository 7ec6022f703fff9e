"""The scripted model server speaks the Anthropic Messages API as the API does: requests read
into what the script needs, answers as one ``message`` or as the streamed events, the client's
own tools chosen, errors in the API's error shape. Plain HTTP, no client library."""

from __future__ import annotations

import http.client
import time
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest

from tests.model_server import (
    ApiError,
    ModelReply,
    ModelRequest,
    ModelServer,
    Shell,
    Usage,
    WriteFile,
)

BASH = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
        "required": ["command"],
    },
}
WRITE = {
    "name": "Write",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    },
}
READ = {"name": "Read", "input_schema": {"type": "object", "properties": {"file_path": {}}}}

CONVERSATION = [
    {"role": "user", "content": [{"type": "text", "text": "# Role: developer\nFix app.py"}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "tests failed"},
            {"type": "text", "text": "go on"},
        ],
    },
]


def post(server: ModelServer, body: Mapping[str, Any], path: str = "/v1/messages") -> Any:
    """POST ``body`` as JSON; the response (read to the end) and its body bytes."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request(
        "POST",
        path,
        orjson.dumps(body),
        {"Content-Type": "application/json", "x-api-key": "dummy", "anthropic-version": "2023"},
    )
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response, data


def events(data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """The server-sent events of a stream: (event name, data)."""
    found = []
    for block in data.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], orjson.loads(fields["data"])))
    return found


class Scripted:
    """One server for the module (stopping one takes half a second): each test sets the
    reply and reads only the requests it made."""

    def __init__(self) -> None:
        self.reply = ModelReply()
        self.server = ModelServer(self.script)
        self.seen = 0

    def script(self, request: ModelRequest) -> ModelReply:
        return self.reply

    def __call__(self, reply: ModelReply) -> ModelServer:
        self.reply = reply
        self.seen = len(self.server.model_requests())
        return self.server

    def requests(self) -> tuple[ModelRequest, ...]:
        return self.server.model_requests()[self.seen :]


@pytest.fixture(scope="module")
def scripted() -> Iterator[Scripted]:
    served = Scripted()
    yield served
    served.server.close()


def test_a_request_is_read_into_the_prompt_turn_last_tool_result_and_tools(
    scripted: Scripted,
) -> None:
    """User text without tool results, one assistant message so far, the latest tool result,
    the offered tools with their input schemas, and the system text."""
    server = scripted(ModelReply(text="ok"))
    body = {
        "model": "claude-test",
        "system": [{"type": "text", "text": "be brief"}, {"type": "text", "text": "really"}],
        "messages": CONVERSATION,
        "tools": [BASH, WRITE],
        "max_tokens": 100,
    }
    response, _ = post(server, body)
    assert response.status == 200
    (request,) = scripted.requests()
    assert request.model == "claude-test"
    assert request.prompt == "# Role: developer\nFix app.py\n\ngo on"
    assert request.turn == 1
    assert request.last_tool_result == "tests failed"
    assert [t.name for t in request.tools] == ["Bash", "Write"]
    assert request.tools[0].parameters == BASH["input_schema"]
    assert request.system == "be brief\nreally"
    assert request.stream is False


def test_a_string_content_and_a_tool_result_made_of_blocks_are_read(scripted: Scripted) -> None:
    """``content`` may be a plain string, and a tool result's content a list of text blocks."""
    server = scripted(ModelReply(text="ok"))
    messages = [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "calling"},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "content": [{"type": "text", "text": "out"}],
                }
            ],
        },
    ]
    post(server, {"model": "m", "messages": messages})
    (request,) = scripted.requests()
    assert (request.prompt, request.turn, request.last_tool_result) == ("hello", 1, "out")


def test_a_reply_with_a_command_is_a_tool_use_message(scripted: Scripted) -> None:
    """Not streamed: one ``message`` with the text, then Claude Code's ``Bash`` tool called with
    the command; ``stop_reason`` is ``tool_use``; usage as the script says, cache included."""
    usage = Usage(input_tokens=11, output_tokens=22, cache_read_tokens=33, cache_write_tokens=44)
    server = scripted(ModelReply(text="Running it.", actions=(Shell("make test"),), usage=usage))
    response, data = post(server, {"model": "m", "messages": CONVERSATION, "tools": [BASH]})
    message = orjson.loads(data)
    assert response.status == 200
    assert response.getheader("Content-Type") == "application/json"
    assert message["type"] == "message"
    assert message["role"] == "assistant"
    assert message["model"] == "m"
    assert message["id"].startswith("msg_")
    text, call = message["content"]
    assert text == {"type": "text", "text": "Running it."}
    assert call["type"] == "tool_use"
    assert call["id"].startswith("toolu_")
    assert call["name"] == "Bash"
    assert call["input"]["command"] == "make test"
    assert message["stop_reason"] == "tool_use"
    assert message["usage"] == {
        "input_tokens": 11,
        "cache_creation_input_tokens": 44,
        "cache_read_input_tokens": 33,
        "output_tokens": 22,
    }


def test_a_reply_without_actions_ends_the_turn(scripted: Scripted) -> None:
    """Only text: ``stop_reason`` is ``end_turn``."""
    server = scripted(ModelReply(text="Done."))
    _, data = post(server, {"model": "m", "messages": CONVERSATION, "tools": [BASH]})
    message = orjson.loads(data)
    assert message["stop_reason"] == "end_turn"
    assert message["content"] == [{"type": "text", "text": "Done."}]


def test_a_file_write_reads_the_file_first_with_claude_codes_tools(scripted: Scripted) -> None:
    """Claude Code's Write refuses a file not read before: a write becomes Read then Write of
    the same path, with distinct tool ids; a client without Read just writes."""
    server = scripted(ModelReply(actions=(WriteFile(path="app.py", content="x = 1\n"),)))
    _, data = post(server, {"model": "m", "messages": CONVERSATION, "tools": [READ, WRITE]})
    read, write = orjson.loads(data)["content"]
    assert (read["name"], read["input"]) == ("Read", {"file_path": "app.py"})
    assert (write["name"], write["input"]) == (
        "Write",
        {"file_path": "app.py", "content": "x = 1\n"},
    )
    assert read["id"] != write["id"]
    _, data = post(server, {"model": "m", "messages": CONVERSATION, "tools": [WRITE]})
    assert [block["name"] for block in orjson.loads(data)["content"]] == ["Write"]


def test_a_streamed_reply_sends_the_events_of_the_messages_api(scripted: Scripted) -> None:
    """message_start, each block's start / deltas / stop, message_delta with the stop reason
    and usage, message_stop; the text deltas join into the text and the ``input_json_delta``
    pieces into the tool's input."""
    usage = Usage(input_tokens=5, output_tokens=7, cache_read_tokens=3, cache_write_tokens=2)
    long_text = "word " * 40
    command = "printf '%s' " + "x" * 120
    server = scripted(ModelReply(text=long_text, actions=(Shell(command),), usage=usage))
    body = {"model": "m", "messages": CONVERSATION, "tools": [BASH], "stream": True}
    response, data = post(server, body)
    assert response.status == 200
    assert response.getheader("Content-Type") == "text/event-stream"
    stream = events(data)
    assert all(name == payload["type"] for name, payload in stream)
    names = [name for name, _ in stream]
    assert names[:2] == ["message_start", "ping"]
    assert names[-2:] == ["message_delta", "message_stop"]
    start = stream[0][1]["message"]
    assert (start["role"], start["content"], start["stop_reason"]) == ("assistant", [], None)
    assert start["usage"]["input_tokens"] == 5
    assert start["usage"]["cache_read_input_tokens"] == 3
    opened = [p for n, p in stream if n == "content_block_start"]
    assert [(p["index"], p["content_block"]["type"]) for p in opened] == [
        (0, "text"),
        (1, "tool_use"),
    ]
    assert opened[1]["content_block"]["name"] == "Bash"
    assert opened[1]["content_block"]["input"] == {}
    deltas = [p for n, p in stream if n == "content_block_delta"]
    text = "".join(p["delta"]["text"] for p in deltas if p["delta"]["type"] == "text_delta")
    assert text == long_text
    pieces = [p["delta"]["partial_json"] for p in deltas if p["index"] == 1]
    assert len(pieces) > 2, "the arguments arrive in several pieces, as the API sends them"
    assert orjson.loads("".join(pieces))["command"] == command
    assert [p["index"] for n, p in stream if n == "content_block_stop"] == [0, 1]
    ending = stream[-2][1]
    assert ending["delta"]["stop_reason"] == "tool_use"
    assert ending["usage"]["output_tokens"] == 7
    assert ending["usage"]["cache_creation_input_tokens"] == 2


@pytest.mark.parametrize(
    ("status", "kind", "retry_after"),
    [
        (429, "rate_limit_error", 7),
        (529, "overloaded_error", None),
        (500, "api_error", None),
        (503, "api_error", None),
        (400, "invalid_request_error", None),
    ],
)
def test_an_error_reply_is_the_apis_error_body(
    scripted: Scripted, status: int, kind: str, retry_after: int | None
) -> None:
    """``{"type": "error", "error": {"type", "message"}}`` with the status; ``retry-after``
    when the script gives one. Streamed requests get the same (the API errors before the
    stream starts)."""
    error = ApiError(status=status, message="slow down", retry_after_s=retry_after)
    server = scripted(ModelReply(error=error))
    for stream in (False, True):
        response, data = post(server, {"model": "m", "messages": CONVERSATION, "stream": stream})
        assert response.status == status
        assert orjson.loads(data) == {
            "type": "error",
            "error": {"type": kind, "message": "slow down"},
        }
        expected = None if retry_after is None else str(retry_after)
        assert response.getheader("retry-after") == expected


def test_a_slow_stream_arrives_event_by_event(scripted: Scripted) -> None:
    """With ``chunk_delay_s`` each event waits before it is sent: the first arrives long before
    the last, so a client sees a stream that is still running."""
    server = scripted(ModelReply(text="slow", chunk_delay_s=0.1))
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    body = {"model": "m", "messages": CONVERSATION, "stream": True}
    started = time.monotonic()
    connection.request("POST", "/v1/messages", orjson.dumps(body))
    response = connection.getresponse()
    first = response.read1()
    first_at = time.monotonic() - started
    rest = response.read()
    total = time.monotonic() - started
    connection.close()
    assert first.startswith(b"event: message_start")
    assert total - first_at >= 0.4, (first_at, total)
    assert [name for name, _ in events(first + rest)][-1] == "message_stop"


def test_only_the_messages_api_is_answered(scripted: Scripted) -> None:
    """A path of another API is not this adapter's: the server says 404 and asks no script."""
    server = scripted(ModelReply(text="x"))
    response, _ = post(server, {"model": "m"}, path="/v1/complete")
    assert response.status == 404
    assert scripted.requests() == ()


def test_a_replys_headers_are_sent_on_a_message_and_on_an_error(scripted: Scripted) -> None:
    """``ModelReply.headers`` go out besides the API's own (Claude Code reads its usage
    windows from ``anthropic-ratelimit-unified-*``), streamed or not, and on an error too,
    where one named like the API's own (``retry-after``) replaces it."""
    unified = {
        "anthropic-ratelimit-unified-status": "allowed_warning",
        "anthropic-ratelimit-unified-5h-utilization": "0.91",
    }
    server = scripted(ModelReply(text="hi", headers=unified))
    for stream in (False, True):
        response, _ = post(server, {"model": "m", "messages": CONVERSATION, "stream": stream})
        assert response.status == 200
        assert response.getheader("anthropic-ratelimit-unified-status") == "allowed_warning"
        assert response.getheader("anthropic-ratelimit-unified-5h-utilization") == "0.91"
    rejected = {"anthropic-ratelimit-unified-status": "rejected", "Retry-After": "9"}
    error = ApiError(status=429, message="limited", retry_after_s=1)
    response, data = post(
        scripted(ModelReply(error=error, headers=rejected)),
        {"model": "m", "messages": CONVERSATION},
    )
    assert response.status == 429
    assert orjson.loads(data)["error"]["type"] == "rate_limit_error"
    assert response.getheader("anthropic-ratelimit-unified-status") == "rejected"
    assert response.getheaders().count(("Retry-After", "9")) == 1
    assert [name for name, _ in response.getheaders() if name.lower() == "retry-after"] == [
        "Retry-After"
    ]
