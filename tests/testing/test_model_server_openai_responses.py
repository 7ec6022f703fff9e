"""The scripted model server's OpenAI Responses API (Codex's) over plain HTTP.

Requests are sent with ``http.client`` the way Codex sends them (``POST /v1/responses``,
``stream: true``, ``input`` items); the answers are read as raw server-sent events.
"""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import orjson
import pytest

from tests.model_server import (
    Api,
    ApiError,
    McpCall,
    ModelReply,
    ModelRequest,
    ModelServer,
    NoToolError,
    Shell,
    ToolCall,
    ToolSpec,
    Usage,
    WriteFile,
    concrete_call,
)
from tests.model_server._openai_responses import OpenAIResponsesAdapter

EXEC_COMMAND = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command in a PTY.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
        "required": ["cmd"],
    },
}
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "tools": [{"type": "function", "name": "send_input", "parameters": {"type": "object"}}],
}


def _message(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def _body(*items: Mapping[str, Any], stream: bool = True, tools: Any = None) -> dict[str, Any]:
    return {
        "model": "scripted",
        "stream": stream,
        "store": False,
        "tool_choice": "auto",
        "input": [
            _message("developer", "You are Codex."),
            _message("user", "<environment_context>cwd</environment_context>"),
            _message("user", "# Role: developer\nFix app.py."),
            *items,
        ],
        "tools": [EXEC_COMMAND, NAMESPACE] if tools is None else tools,
    }


def _post(
    url: str, body: Mapping[str, Any], path: str = "/v1/responses"
) -> http.client.HTTPResponse:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    connection.request("POST", path, orjson.dumps(body), {"Content-Type": "application/json"})
    return connection.getresponse()


def _events(raw: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Each server-sent event as (its ``event:`` name, its data)."""
    found = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        found.append((fields["event"], orjson.loads(fields["data"])))
    return found


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[ModelRequest], ModelReply]], ModelServer]]:
    """``serve(script)``: a running server, closed after the test."""
    servers: list[ModelServer] = []

    def start(script: Callable[[ModelRequest], ModelReply]) -> ModelServer:
        servers.append(ModelServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_it_handles_posts_to_responses_under_any_base_path() -> None:
    """``/v1/responses`` (an OpenAI base URL) and ``/responses`` under any other base are the
    API's; other paths and methods are not."""
    adapter = OpenAIResponsesAdapter()
    assert adapter.handles("POST", "/v1/responses")
    assert adapter.handles("POST", "/responses")
    assert adapter.handles("POST", "/backend-api/codex/responses")
    assert not adapter.handles("GET", "/v1/responses")
    assert not adapter.handles("POST", "/v1/chat/completions")
    assert not adapter.handles("POST", "/v1/responses/compact")


def test_a_request_is_read_into_the_prompt_the_system_text_and_the_tools() -> None:
    """User messages are the prompt, developer messages and ``instructions`` the system text;
    a namespace's tools are offered by their own names."""
    body = {**_body(), "instructions": "Be brief."}
    request = OpenAIResponsesAdapter().read("/v1/responses", body)
    assert request.api is Api.OPENAI_RESPONSES
    assert request.model == "scripted"
    assert request.prompt == (
        "<environment_context>cwd</environment_context>\n\n# Role: developer\nFix app.py."
    )
    assert request.system == "Be brief.\n\nYou are Codex."
    assert [tool.name for tool in request.tools] == ["exec_command", "send_input"]
    assert request.tools[0].parameters["required"] == ["cmd"]
    assert (request.turn, request.last_tool_result, request.stream) == (0, None, True)


def test_a_plain_string_input_is_the_prompt() -> None:
    """``input`` may be one string: the user's message."""
    request = OpenAIResponsesAdapter().read("/v1/responses", {"model": "m", "input": "Hi"})
    assert (request.prompt, request.turn, request.tools, request.stream) == ("Hi", 0, (), False)


def test_the_turn_counts_answers_and_the_last_tool_result_is_read(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """The output items of an answer, sent back as input with their results, make the next
    request's turn 1 and its last tool result the command's output, also when an answer's
    two calls come back interleaved with their outputs."""
    two_calls = ModelReply(text="Looking.", actions=(Shell("ls"), Shell("pwd")))
    server = serve(lambda request: two_calls)
    with _post(server.url, _body(stream=False)) as answer:
        output = orjson.loads(answer.read())["output"]
    message, first, second = output
    assert [item["type"] for item in output] == ["message", "function_call", "function_call"]
    assert first["call_id"] != second["call_id"]
    follow_up = _body(
        message,
        first,
        {"type": "function_call_output", "call_id": first["call_id"], "output": "app.py"},
        second,
        {"type": "function_call_output", "call_id": second["call_id"], "output": "/repo"},
    )
    request = OpenAIResponsesAdapter().read("/v1/responses", follow_up)
    assert (request.turn, request.last_tool_result) == (1, "/repo")


def test_answers_of_another_server_count_once_per_run_of_model_items() -> None:
    """Model items with foreign ids count as one answer per run of adjacent model items;
    a user message after a tool result means there is no last tool result."""
    items = (
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "function_call", "id": "fc_x", "call_id": "c1", "name": "exec_command"},
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": [{"type": "input_text", "text": "ok"}],
        },
        _message("assistant", "Done."),
    )
    adapter = OpenAIResponsesAdapter()
    assert adapter.read("/v1/responses", _body(*items)).turn == 2
    assert adapter.read("/v1/responses", _body(*items[:3])).last_tool_result == "ok"
    later = adapter.read("/v1/responses", _body(*items[:3], _message("user", "more")))
    assert later.last_tool_result is None


def test_a_text_reply_streams_as_the_api_streams_it(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """A text reply is created, in progress, one message item whose deltas make the text, and
    completed with usage that counts cached tokens inside the input tokens."""
    text = "The fix is one line long, and here it is."
    usage = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=80)
    server = serve(lambda request: ModelReply(text=text, usage=usage))
    with _post(server.url, _body()) as answer:
        assert answer.status == 200
        assert answer.getheader("Content-Type") == "text/event-stream"
        events = _events(answer.read())
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    deltas = [data["delta"] for name, data in events if name == "response.output_text.delta"]
    assert len(deltas) > 1
    assert "".join(deltas) == text
    assert [n for n in names if n != "response.output_text.delta"] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    done = dict(events)["response.output_item.done"]["item"]
    assert done["role"] == "assistant"
    assert done["content"] == [{"type": "output_text", "text": text, "annotations": []}]
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["output"] == [done]
    assert completed["usage"] == {
        "input_tokens": 200,
        "input_tokens_details": {"cached_tokens": 80},
        "output_tokens": 30,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 230,
    }


def test_a_shell_action_is_a_call_of_codexs_exec_command(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """A Shell action streams as a function_call of ``exec_command`` with ``cmd``: added,
    argument deltas, arguments done, item done, all with the same call id."""
    server = serve(lambda request: ModelReply(actions=(Shell('"$RALPH_BIN" emit a.b x'),)))
    with _post(server.url, _body()) as answer:
        events = _events(answer.read())
    names = [name for name, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added, done = (
        dict(events)["response.output_item.added"],
        dict(events)["response.output_item.done"],
    )
    assert added["item"]["arguments"] == ""
    assert done["item"]["type"] == "function_call"
    assert done["item"]["name"] == "exec_command"
    assert done["item"]["call_id"] == added["item"]["call_id"]
    assert orjson.loads(done["item"]["arguments"]) == {"cmd": '"$RALPH_BIN" emit a.b x'}
    assert (
        dict(events)["response.function_call_arguments.done"]["arguments"]
        == done["item"]["arguments"]
    )


def test_a_file_is_written_through_exec_command_as_a_here_doc() -> None:
    """Codex offers no file-writing tool, so WriteFile becomes a here-doc in its shell."""
    adapter = OpenAIResponsesAdapter()
    request = adapter.read("/v1/responses", _body(stream=False))
    answer = adapter.answer(
        request, ModelReply(actions=(WriteFile(path="a/b.txt", content="x = 1\n"),))
    )
    call = orjson.loads(answer.chunks[0])["output"][0]
    command = orjson.loads(call["arguments"])["cmd"]
    assert call["name"] == "exec_command"
    assert command == "mkdir -p 'a' && cat > 'a/b.txt' <<'RALPH_MODEL_EOF'\nx = 1\nRALPH_MODEL_EOF"


def test_a_call_of_a_freeform_tool_is_a_custom_tool_call() -> None:
    """A ToolCall of a ``custom`` tool (apply_patch) sends its ``input`` as raw text."""
    adapter = OpenAIResponsesAdapter()
    request = adapter.read("/v1/responses", _body(tools=[EXEC_COMMAND, APPLY_PATCH]))
    patch = "*** Begin Patch\n*** End Patch"
    answer = adapter.answer(
        request, ModelReply(actions=(ToolCall(name="apply_patch", arguments={"input": patch}),))
    )
    events = _events(b"".join(answer.chunks))
    assert "response.custom_tool_call_input.delta" in [name for name, _ in events]
    done = dict(events)["response.output_item.done"]["item"]
    assert (done["type"], done["name"], done["input"]) == ("custom_tool_call", "apply_patch", patch)


def test_a_namespaced_tool_is_called_with_its_namespace() -> None:
    """An MCP server's tool, offered as Codex offers it (``emit`` in the namespace
    ``mcp__ralph``), is called by its own name with the namespace beside it, as Codex needs
    (it answers "unsupported call: emit" to a call without one)."""
    ralph = {
        "type": "namespace",
        "name": "mcp__ralph",
        "description": "ralph's tools",
        "tools": [{"type": "function", "name": "emit", "parameters": {"type": "object"}}],
    }
    adapter = OpenAIResponsesAdapter()
    request = adapter.read("/v1/responses", _body(tools=[EXEC_COMMAND, NAMESPACE, ralph]))
    assert [(t.namespace, t.name) for t in request.tools] == [
        ("", "exec_command"),
        ("multi_agent_v1", "send_input"),
        ("mcp__ralph", "emit"),
    ]
    arguments = {"topic": "build.done", "payload": "fixed"}
    answer = adapter.answer(
        request, ModelReply(actions=(McpCall(tool="emit", arguments=arguments),))
    )
    events = _events(b"".join(answer.chunks))
    added = dict(events)["response.output_item.added"]["item"]
    done = dict(events)["response.output_item.done"]["item"]
    for item in (added, done):
        assert (item["type"], item["namespace"], item["name"]) == (
            "function_call",
            "mcp__ralph",
            "emit",
        )
    assert orjson.loads(done["arguments"]) == arguments
    plain = adapter.answer(request, ModelReply(actions=(Shell("ls"),)))
    assert (
        "namespace"
        not in dict(_events(b"".join(plain.chunks)))["response.output_item.done"]["item"]
    )


@pytest.mark.parametrize(
    "offered",
    ["mcp__ralph__emit", "mcp_ralph_emit", "ralph_emit"],
    ids=["claude", "gemini", "opencode"],
)
def test_an_mcp_call_takes_the_name_the_client_gives_the_tool(offered: str) -> None:
    """Claude Code, Gemini CLI and OpenCode name an MCP server's tool each in their own way;
    an McpCall finds the one offered, and none offered is a NoToolError naming the tool."""
    tools = (ToolSpec(name="Bash"), ToolSpec(name=offered), ToolSpec(name="ralph_other"))
    request = ModelRequest(
        api=Api.ANTHROPIC, model="m", prompt="", turn=0, last_tool_result=None, tools=tools
    )
    call = McpCall(tool="emit", arguments={"topic": "a"})
    assert concrete_call(call, request) == (offered, {"topic": "a"})
    with pytest.raises(NoToolError, match="no tool ask_person of the MCP server ralph"):
        concrete_call(McpCall(tool="ask_person"), request)


def test_without_stream_the_response_is_one_json_body(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """``stream: false`` gets the completed response object, usage and all."""
    server = serve(
        lambda request: ModelReply(text="Hi.", usage=Usage(input_tokens=10, output_tokens=2))
    )
    with _post(server.url, _body(stream=False)) as answer:
        assert answer.getheader("Content-Type") == "application/json"
        response = orjson.loads(answer.read())
    assert response["object"] == "response"
    assert response["status"] == "completed"
    assert response["output"][0]["content"][0]["text"] == "Hi."
    assert response["usage"]["input_tokens"] == 10
    assert response["usage"]["output_tokens"] == 2


def test_a_rate_limit_is_a_429_with_retry_after(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """A 429 carries ``retry-after`` and the API's error body with ``rate_limit_exceeded``."""
    limited = ModelReply(error=ApiError(status=429, message="Rate limit reached.", retry_after_s=3))
    server = serve(lambda request: limited)
    with _post(server.url, _body()) as answer:
        assert answer.status == 429
        assert answer.getheader("retry-after") == "3"
        error = orjson.loads(answer.read())["error"]
    assert error["code"] == "rate_limit_exceeded"
    assert error["message"].startswith("Rate limit reached.")
    assert set(error) == {"message", "type", "param", "code"}


def test_a_server_error_has_the_apis_error_body(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """A 5xx answers its status with a ``server_error``."""
    server = serve(lambda request: ModelReply(error=ApiError(status=503, message="Overloaded.")))
    with _post(server.url, _body()) as answer:
        assert answer.status == 503
        error = orjson.loads(answer.read())["error"]
    assert (error["type"], error["message"], error["code"]) == ("server_error", "Overloaded.", None)


def test_an_error_with_status_200_is_a_response_failed_event(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """Status 200 means the response started and then failed: ``response.failed`` ends the
    stream, and a rate limit's message names the delay as Codex reads it."""
    failing = ModelReply(error=ApiError(status=200, message="Rate limit reached.", retry_after_s=2))
    server = serve(lambda request: failing)
    with _post(server.url, _body()) as answer:
        assert answer.status == 200
        events = _events(answer.read())
    assert [name for name, _ in events][-1] == "response.failed"
    assert "response.completed" not in [name for name, _ in events]
    response = events[-1][1]["response"]
    assert response["status"] == "failed"
    assert response["error"]["code"] == "rate_limit_exceeded"
    assert "try again in 2s" in response["error"]["message"]
    with _post(server.url, _body(stream=False)) as answer:
        assert orjson.loads(answer.read())["status"] == "failed"


def test_a_slow_stream_sends_its_events_one_by_one(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """With ``chunk_delay_s`` the first event arrives long before the last one: the events
    are written apart, not all at the end."""
    slow = ModelReply(text="one two three four five six seven", chunk_delay_s=0.05)
    server = serve(lambda request: slow)
    with _post(server.url, _body()) as answer:
        started = time.monotonic()
        first = answer.readline()
        first_at = time.monotonic() - started
        rest = answer.read()
        total = time.monotonic() - started
    assert first.startswith(b"event: response.created")
    events = _events(first + rest)
    assert len(events) >= 9
    assert total - first_at >= 0.05 * (len(events) - 2)


def test_every_exchange_is_recorded_with_the_request_read(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """The server keeps each request as read, with the script's reply and the status."""
    server = serve(lambda request: ModelReply(text="ok"))
    with _post(server.url, _body(), path="/responses") as answer:
        answer.read()
    (exchange,) = server.exchanges
    assert (exchange.path, exchange.status) == ("/responses", 200)
    assert exchange.request is not None
    assert exchange.request.api is Api.OPENAI_RESPONSES


def test_a_response_that_fails_for_another_reason_says_server_error() -> None:
    """Without a delay, a failed response is a ``server_error``, which Codex retries as a
    broken stream."""
    adapter = OpenAIResponsesAdapter()
    request = adapter.read("/v1/responses", _body())
    answer = adapter.answer(
        request, ModelReply(error=ApiError(status=200, message="Something broke."))
    )
    name, data = _events(b"".join(answer.chunks))[-1]
    assert name == "response.failed"
    assert data["response"]["error"] == {
        "message": "Something broke.",
        "type": "server_error",
        "param": None,
        "code": "server_error",
    }


def test_an_errors_fields_are_added_to_the_apis_error_object(
    serve: Callable[[Callable[[ModelRequest], ModelReply]], ModelServer],
) -> None:
    """``ApiError.fields`` join the error object, replacing its own of the same name: a
    ChatGPT usage limit as Codex reads it (``usage_limit_reached``, ``resets_at``), in a 429
    and in a ``response.failed`` event alike."""
    fields = {"type": "usage_limit_reached", "plan_type": "plus", "resets_at": 1900000000}
    limited = ModelReply(
        error=ApiError(
            status=429,
            message="The usage limit has been reached",
            retry_after_s=None,
            fields=fields,
        )
    )
    server = serve(lambda request: limited)
    with _post(server.url, _body()) as answer:
        assert answer.status == 429
        error = orjson.loads(answer.read())["error"]
    assert error["type"] == "usage_limit_reached"
    assert (error["plan_type"], error["resets_at"]) == ("plus", 1900000000)
    assert error["message"] == "The usage limit has been reached"
    adapter = OpenAIResponsesAdapter()
    request = adapter.read("/v1/responses", _body())
    failed = adapter.answer(
        request,
        ModelReply(
            error=ApiError(status=200, message="Limited.", retry_after_s=None, fields=fields)
        ),
    )
    name, data = _events(b"".join(failed.chunks))[-1]
    assert name == "response.failed"
    assert data["response"]["error"]["type"] == "usage_limit_reached"
    assert data["response"]["error"]["resets_at"] == 1900000000
