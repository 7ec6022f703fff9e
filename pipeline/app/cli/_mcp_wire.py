"""The Model Context Protocol over stdio, as ralph serves it (I/O: stdin and stdout).

One JSON-RPC message a line, answered in order: ``initialize``, ``ping``, ``tools/list`` and
``tools/call``; notifications get no answer; anything else is JSON-RPC's -32601. A line that
is no JSON, or over :data:`MAX_LINE_BYTES` (drained, never kept), is -32700, a batch or a
message that is no request -32600, and the loop goes on. A tool's refusal, bad arguments
included, is a result with ``isError`` and the reason, never a crash. It serves any table of
:class:`Tool`: the agent's (``_mcp_agent``) and the person's (``_mcp_control``).

Its own loop, not the ``mcp`` SDK's: agents start the server once per invocation and give it
a few seconds to answer, and importing the SDK takes about a second (the design,
``docs/research/mcp-design.md``, has the figures). So this module imports only the standard
library, and only JSON-RPC ever reaches stdout.
"""

from __future__ import annotations

import json
import re
import sys
import traceback

from pipeline import PipelineError, __version__

# ``typing`` is imported for the type checker only: an agent's CLI starts this server for
# every invocation, and waits for its answer.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, BinaryIO, Final

__all__ = ["MAX_LINE_BYTES", "PROTOCOL_VERSIONS", "Tool", "ToolError", "object_schema", "serve"]

MAX_LINE_BYTES: Final = 4 << 20
"""The longest message read: a cap on the line, not on what a tool may write."""

PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The protocol revisions answered in kind; any other is offered the last."""

_PARSE_ERROR: Final = -32700
_INVALID_REQUEST: Final = -32600
_METHOD_NOT_FOUND: Final = -32601
_INVALID_PARAMS: Final = -32602


class ToolError(PipelineError, ValueError):
    """A tool's refusal: its message is the reason the calling model reads."""


class Tool:
    """One tool: its name, what it does, the JSON Schema of its arguments, and the function
    that answers a call with text. A plain class: attrs costs more to import than the loop."""

    __slots__ = ("call", "description", "name", "schema")

    def __init__(
        self,
        name: str,
        description: str,
        schema: dict[str, Any],
        call: Callable[[dict[str, Any]], str],
    ) -> None:
        self.name = name
        self.description = description
        self.schema = schema
        self.call = call


class _RpcError(PipelineError):
    """A JSON-RPC error answer (``code``, ``message``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def object_schema(required: tuple[str, ...] = (), **properties: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema: an object of ``properties``, ``required`` among them, and no
    other key (what :func:`_checked` holds every call's arguments to)."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _checked(schema: Mapping[str, Any], arguments: object) -> dict[str, Any]:
    """``arguments`` when they fit ``schema`` (the subset of JSON Schema the tables use: an
    object of strings, whole numbers, arrays of strings and any values); :class:`ToolError`
    says why not."""
    if not isinstance(arguments, dict):
        raise ToolError("the arguments must be a JSON object")
    properties = schema["properties"]
    for name in arguments:
        if name not in properties:
            takes = ", ".join(properties) or "no arguments"
            raise ToolError(f"unknown argument {name[:40]!r}: this tool takes {takes}")
    for name in schema.get("required", ()):
        if name not in arguments:
            raise ToolError(f"the argument {name!r} is required")
    for name, value in arguments.items():
        _check(name, properties[name], value)
    return arguments


def _check(name: str, rule: Mapping[str, Any], value: object) -> None:
    kind = rule.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ToolError(f"{name} must be a string")
        if len(value) < rule.get("minLength", 0):
            raise ToolError(f"{name} is empty" if not value else f"{name} is too short")
        if len(value) > rule.get("maxLength", len(value)):
            raise ToolError(f"{name} is {len(value)} characters, over {rule['maxLength']}")
        if "pattern" in rule and not re.fullmatch(rule["pattern"], value):
            raise ToolError(f"{name} {value[:40]!r} does not match {rule['pattern']}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ToolError(f"{name} must be an array")
        if len(value) > rule.get("maxItems", len(value)):
            raise ToolError(f"{name} has {len(value)} items, over {rule['maxItems']}")
        for index, item in enumerate(value):
            _check(f"{name}[{index}]", rule["items"], item)
    elif kind == "integer":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(f"{name} must be a whole number")
        if value < rule.get("minimum", value):
            raise ToolError(f"{name} is {value}, under {rule['minimum']}")
    # No type: any JSON value (an emitted payload), checked by the tool that writes it.


def _text(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _called(tools: Mapping[str, Tool], params: Mapping[str, Any]) -> dict[str, Any]:
    name = params.get("name")
    tool = tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise _RpcError(_INVALID_PARAMS, f"unknown tool {str(name)[:60]!r}")
    try:
        return _text(tool.call(_checked(tool.schema, params.get("arguments", {}))), error=False)
    except ToolError as refusal:
        return _text(str(refusal), error=True)
    except Exception as error:
        traceback.print_exc(file=sys.stderr)
        return _text(f"ralph's {tool.name} failed: {error!r} (a bug in ralph)", error=True)


def _result(
    method: str, params: Mapping[str, Any], tools: Mapping[str, Tool], hello: Mapping[str, Any]
) -> dict[str, Any]:
    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
        return {**hello, "protocolVersion": version}
    if method == "ping":
        return {}
    if method == "tools/list":
        listed = [
            {"name": t.name, "description": t.description, "inputSchema": t.schema}
            for t in tools.values()
        ]
        return {"tools": listed}
    if method == "tools/call":
        return _called(tools, params)
    raise _RpcError(_METHOD_NOT_FOUND, f"method not found: {method[:60]}")


def _answer(line: bytes, tools: Mapping[str, Tool], hello: Mapping[str, Any]) -> object:
    """The answer to one line (None for a notification)."""
    try:
        message = json.loads(line)
    except (ValueError, RecursionError) as error:
        return _error(None, _PARSE_ERROR, f"parse error: {str(error)[:200]}")
    if isinstance(message, list):
        return _error(None, _INVALID_REQUEST, "a batch is not supported: one message a line")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(None, _INVALID_REQUEST, "not a JSON-RPC 2.0 message")
    ident = message.get("id")
    if "id" not in message:
        return None  # a notification (initialized, cancelled): nothing to answer
    if isinstance(ident, bool) or not isinstance(ident, str | int | None):
        return _error(None, _INVALID_REQUEST, "the id must be a string or a number")
    method, params = message.get("method"), message.get("params", {})
    if not isinstance(method, str):
        return _error(ident, _INVALID_REQUEST, "no method")
    if not isinstance(params, dict):
        return _error(ident, _INVALID_PARAMS, "params must be an object")
    try:
        return {"jsonrpc": "2.0", "id": ident, "result": _result(method, params, tools, hello)}
    except _RpcError as refusal:
        return _error(ident, refusal.code, str(refusal))


def _error(ident: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _lines(stream: BinaryIO) -> Any:
    """Each line of ``stream``; one over :data:`MAX_LINE_BYTES` as None, drained unkept."""
    while line := stream.readline(MAX_LINE_BYTES + 1):
        if len(line) > MAX_LINE_BYTES:
            rest = line
            while rest and not rest.endswith(b"\n"):
                rest = stream.readline(MAX_LINE_BYTES)
            yield None
        elif line.strip():
            yield line


def serve(tools: Sequence[Tool], *, instructions: str) -> int:
    """Answer MCP requests from stdin on stdout, as the server ``ralph``, until stdin closes;
    the exit status (0)."""
    sink = sys.stdout.buffer
    table = {tool.name: tool for tool in tools}
    hello = {
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "ralph", "version": __version__},
        "instructions": instructions,
    }
    for line in _lines(sys.stdin.buffer):
        if line is None:
            answer: object = _error(None, _PARSE_ERROR, f"a line over {MAX_LINE_BYTES} bytes")
        else:
            answer = _answer(line, table, hello)
        if answer is None:
            continue
        try:
            # ASCII only: a lone surrogate a tool echoes can always be encoded.
            sink.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            sink.flush()
        except BrokenPipeError:
            break  # the client is gone: nobody is left to answer
    return 0
