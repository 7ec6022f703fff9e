"""Choosing the client's own tool for an abstract action (pure).

Each agent CLI names its tools differently; an action names none. The tool is found among
those the request offers, by the names the five CLIs use, and its arguments are filled in by
the parameter names its schema declares (``file_path``, ``filePath`` or ``path``; a ``command``
that is a string or an argv array). An MCP server's tool is found by the names the CLIs give
it: Claude Code's ``mcp__SERVER__TOOL``, Gemini CLI's ``mcp_SERVER_TOOL``, OpenCode's
``SERVER_TOOL``, and Codex's ``TOOL`` in the namespace ``mcp__SERVER``, which is called as
``mcp__SERVER.TOOL`` (the Responses adapter splits it into a namespace and a name).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from tests.model_server._script import (
    Action,
    McpCall,
    ModelRequest,
    Shell,
    ToolCall,
    ToolSpec,
    WriteFile,
)

__all__ = ["SHELL_TOOLS", "WRITE_TOOLS", "NoToolError", "concrete_call"]

SHELL_TOOLS: Final = ("Bash", "run_shell_command", "bash", "shell", "exec_command", "shell_command")
"""The shell tools of Claude Code, Gemini CLI, OpenCode and Codex, in the order preferred."""
WRITE_TOOLS: Final = ("Write", "write_file", "write")
"""The file-writing tools of Claude Code, Gemini CLI and OpenCode (Codex writes through its
shell or ``apply_patch``)."""


class NoToolError(LookupError):
    """The client offers no tool that can carry out an action."""


def _find(request: ModelRequest, names: tuple[str, ...]) -> ToolSpec | None:
    for name in names:
        for tool in request.tools:
            if tool.name == name:
                return tool
    return None


def _properties(tool: ToolSpec) -> Mapping[str, Any]:
    props = tool.parameters.get("properties", {})
    return props if isinstance(props, Mapping) else {}


def _first_key(tool: ToolSpec, candidates: tuple[str, ...], default: str) -> str:
    props = _properties(tool)
    return next((name for name in candidates if name in props), default)


def _shell_arguments(tool: ToolSpec, command: str) -> dict[str, Any]:
    key = _first_key(tool, ("command", "cmd"), "command")
    schema = _properties(tool).get(key, {})
    is_array = isinstance(schema, Mapping) and schema.get("type") == "array"
    value: Any = ["bash", "-lc", command] if is_array else command
    arguments: dict[str, Any] = {key: value}
    if "description" in _properties(tool):
        arguments["description"] = "run a command"
    return arguments


def _heredoc(path: str, content: str) -> str:
    marker = "RALPH_MODEL_EOF"
    while marker in content:
        marker += "_"
    directory = path.rpartition("/")[0]
    mkdir = f"mkdir -p '{directory}' && " if directory else ""
    ending = "" if content.endswith("\n") else "\n"
    return f"{mkdir}cat > '{path}' <<'{marker}'\n{content}{ending}{marker}"


def _mcp_name(action: McpCall, request: ModelRequest) -> str:
    server, tool = action.server, action.tool
    flat = (f"mcp__{server}__{tool}", f"mcp_{server}_{tool}", f"{server}_{tool}")
    for name in flat:
        if request.offers(name):
            return name
    namespace = f"mcp__{server}"
    if any(t.namespace == namespace and t.name == tool for t in request.tools):
        return f"{namespace}.{tool}"
    offered = ", ".join(t.name for t in request.tools) or "none"
    raise NoToolError(f"the client offers no tool {tool} of the MCP server {server} ({offered})")


def concrete_call(action: Action, request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """The tool name and arguments that carry out ``action`` for this client.

    A ``WriteFile`` for a client without a writing tool goes through its shell (a here-doc,
    which writes the content verbatim except for a missing final newline). Raises
    :class:`NoToolError` when the client offers nothing that fits.
    """
    if isinstance(action, ToolCall):
        return action.name, dict(action.arguments)
    if isinstance(action, McpCall):
        return _mcp_name(action, request), dict(action.arguments)
    if isinstance(action, WriteFile):
        writer = _find(request, WRITE_TOOLS)
        if writer is not None:
            path_key = _first_key(writer, ("file_path", "filePath", "path"), "file_path")
            return writer.name, {path_key: action.path, "content": action.content}
        return concrete_call(Shell(_heredoc(action.path, action.content)), request)
    shell = _find(request, SHELL_TOOLS)
    if shell is None:
        offered = ", ".join(t.name for t in request.tools) or "none"
        raise NoToolError(f"no shell tool among the tools offered ({offered}) for {action!r}")
    return shell.name, _shell_arguments(shell, action.command)
