"""``ralph mcp``'s JSON-RPC loop, spoken to in raw lines: the handshake, every malformed
message answered as JSON-RPC says and the loop going on, and a lean start."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pipeline.app.cli._mcp_wire import MAX_LINE_BYTES
from tests.cli.mcp_driving import ENV, HELLO, RALPH, card_for, raw, request

PING = request(9, "ping")
PONG = {"jsonrpc": "2.0", "id": 9, "result": {}}


def _error(ident: object, code: int, message: str) -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def test_initialize_echoes_a_known_version_and_offers_only_tools(tmp_path: Path) -> None:
    """A known protocol revision is echoed, an unknown one offered the latest; the server
    says it has tools, and nothing else."""
    answers = raw(
        [],
        [request(1, "initialize", protocolVersion="2025-06-18"), request(2, "initialize")],
        tmp_path,
    )
    first, second = (a["result"] for a in answers)
    assert first["protocolVersion"] == "2025-06-18"
    assert second["protocolVersion"] == "2025-11-25"
    assert first["capabilities"] == {"tools": {"listChanged": False}}
    assert first["serverInfo"]["name"] == "ralph"
    assert first["instructions"]


def test_server_discover_is_method_not_found_so_claude_code_falls_back(tmp_path: Path) -> None:
    """Claude Code probes ``server/discover`` first and falls back on -32601."""
    answers = raw([], [request(1, "server/discover"), request(2, "resources/list")], tmp_path)
    assert answers == [
        _error(1, -32601, "method not found: server/discover"),
        _error(2, -32601, "method not found: resources/list"),
    ]


def test_a_line_that_is_no_json_is_a_parse_error_and_the_server_goes_on(tmp_path: Path) -> None:
    """Text, bad UTF-8 and a nesting too deep for the parser are -32700; the next request
    is answered."""
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    answers = raw([], [b"nope\n", b'{"a": "\xff"}\n', deep, PING], tmp_path)
    assert [a.get("error", {}).get("code") for a in answers] == [-32700, -32700, -32700, None]
    assert all(a["id"] is None for a in answers[:3])
    assert answers[-1] == PONG


def test_a_line_over_the_cap_is_refused_without_being_kept(tmp_path: Path) -> None:
    """A line over the cap is -32700 once, however long, and the line after it is read
    whole: also when the cap's next byte is the long line's newline."""
    huge = b"x" * (MAX_LINE_BYTES * 2 + 5) + b"\n"
    edge = b"x" * MAX_LINE_BYTES + b"\n"
    answers = raw([], [huge, PING, edge, PING], tmp_path)
    over = _error(None, -32700, f"a line over {MAX_LINE_BYTES} bytes")
    assert answers == [over, PONG, over, PONG]


def test_a_batch_is_an_invalid_request(tmp_path: Path) -> None:
    """A JSON-RPC batch, a message that is no JSON-RPC 2.0 object, a bad id, no method and
    params that are no object are each refused with their code."""
    answers = raw(
        [],
        [
            [PING],
            {"id": 1, "method": "ping"},
            {"jsonrpc": "2.0", "id": True, "method": "ping"},
            {"jsonrpc": "2.0", "id": 3},
            {"jsonrpc": "2.0", "id": 4, "method": "ping", "params": [1]},
        ],
        tmp_path,
    )
    assert answers == [
        _error(None, -32600, "a batch is not supported: one message a line"),
        _error(None, -32600, "not a JSON-RPC 2.0 message"),
        _error(None, -32600, "the id must be a string or a number"),
        _error(3, -32600, "no method"),
        _error(4, -32602, "params must be an object"),
    ]


def test_notifications_get_no_answer(tmp_path: Path) -> None:
    """``initialized``, ``cancelled`` and an unknown notification are not answered."""
    notes = [
        {"jsonrpc": "2.0", "method": m, "params": {}}
        for m in ("notifications/initialized", "notifications/cancelled", "anything/else")
    ]
    assert raw([], [*notes, PING], tmp_path) == [PONG]


def test_an_unknown_tool_is_invalid_params_and_bad_arguments_a_tool_error(tmp_path: Path) -> None:
    """An unknown tool is JSON-RPC's -32602; arguments that are no object are a tool result
    with ``isError`` and the reason."""
    card = card_for(tmp_path)
    answers = raw(
        ["--card", str(card)],
        [
            request(1, "tools/call", name="deploy", arguments={}),
            request(2, "tools/call", name="emit", arguments=["build.done"]),
        ],
        tmp_path,
    )
    assert answers[0] == _error(1, -32602, "unknown tool 'deploy'")
    assert answers[1]["result"] == {
        "content": [{"type": "text", "text": "the arguments must be a JSON object"}],
        "isError": True,
    }


def test_stdout_carries_only_json_rpc(tmp_path: Path) -> None:
    """Every line on stdout is a JSON-RPC answer, even with no card to read (each call is
    then an error naming why) and for a usage of every tool."""
    lines = [
        request(i, "tools/call", name=name, arguments={})
        for i, name in enumerate(("emit", "run_status", "list_tasks"), 1)
    ]
    done = subprocess.run(
        [*RALPH, "mcp"],
        input=b"".join(json.dumps(m).encode() + b"\n" for m in [*HELLO, *lines]),
        cwd=tmp_path,
        env={k: v for k, v in ENV.items() if not k.startswith("RALPH_")},
        capture_output=True,
        check=True,
    )
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["jsonrpc"] for a in answers] == ["2.0"] * 4
    no_card = "no card: start the server as `ralph mcp --card PATH`, or inside a ralph run"
    texts = [a["result"]["content"][0]["text"] for a in answers[2:]]
    assert texts == [no_card, no_card]
    assert answers[1]["result"]["content"][0]["text"] == "the argument 'topic' is required"


def test_closed_stdin_ends_with_status_0(tmp_path: Path) -> None:
    """The client closing stdin ends the server with status 0 and nothing printed; a usage
    mistake is status 2."""
    done = subprocess.run([*RALPH, "mcp"], input=b"", cwd=tmp_path, env=ENV, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    wrong = subprocess.run(
        [*RALPH, "mcp", "--cards"], input=b"", cwd=tmp_path, env=ENV, capture_output=True
    )
    assert wrong.returncode == 2
    assert b"usage: ralph mcp [--card PATH]" in wrong.stderr


def test_ralph_mcp_loads_neither_typer_nor_the_engine_nor_mcp(tmp_path: Path) -> None:
    """What makes it start fast, checked directly: answering ``tools/list`` loads no typer,
    engine, events, store, cattrs or ``mcp`` SDK (the card is read on the first call)."""
    card = card_for(tmp_path)
    probe = (
        "import io, runpy, sys\n"
        f"sys.argv = ['ralph', 'mcp', '--card', {str(card)!r}]\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO("
        'b\'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\\n\'))\n'
        "try:\n"
        "    runpy.run_module('pipeline.app.cli', run_name='__main__')\n"
        "except SystemExit as done:\n"
        "    assert done.code == 0, done.code\n"
        "heavy = [m for m in ('typer', 'rich', 'cattrs', 'attrs', 'pipeline.engine',"
        " 'pipeline.events', 'pipeline.handlers.store', 'mcp', 'orjson') if m in sys.modules]\n"
        "sys.stderr.write(repr(heavy))\n"
    )
    done = subprocess.run(
        [RALPH[0], "-c", probe], cwd=tmp_path, env=ENV, capture_output=True, text=True, check=True
    )
    assert '"name":"emit"' in done.stdout
    assert done.stderr.endswith("[]"), done.stderr
