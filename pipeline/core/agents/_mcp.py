"""How an agent CLI is told of ralph's MCP server (pure): the shape each preset declares.

ralph's server is ``ralph mcp --card PATH``, started by the agent's CLI as a child process
(``docs/research/mcp-design.md``). A preset that can start it declares :class:`McpWiring`:
a pure function of the server's command, the agent's environment and a reader of the
person's files under ``$HOME``, giving the argv, variables and read-only files one
invocation gets (:class:`Wired`), or why this CLI cannot be wired here. A CLI without an
MCP client declares none. The handler that runs agents applies it
(``pipeline.handlers.agents.mcp``).
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias, final

from attrs import field, frozen

__all__ = [
    "MCP_TOOLS",
    "SERVER",
    "HomeReader",
    "McpWiring",
    "Wire",
    "Wired",
    "json_object",
    "toml_value",
]

SERVER: Final = "ralph"
"""The name every CLI is given ralph's server under (a person's own ``ralph`` is replaced
for the invocation)."""

MCP_TOOLS: Final = (
    "emit",
    "ask_person",
    "keep_memory",
    "forget_memory",
    "list_memories",
    "add_task",
    "start_task",
    "finish_task",
    "block_task",
    "list_tasks",
    "run_status",
)
"""The server's tools, in its order (``pipeline.app.cli._mcp_agent`` serves them; importing it
here would load the server's own modules into the core, so a test holds the two equal)."""

HomeReader: TypeAlias = Callable[[str], bytes | None]
"""The bytes of a file under the agent's ``$HOME`` by its relative path (None: absent,
unreadable, a link or no regular file)."""


@final
@frozen(kw_only=True)
class Wired:
    """What one invocation gets so that its CLI starts ralph's server."""

    argv: tuple[str, ...] = ()
    """Appended to the invocation's argv."""
    env: Mapping[str, str] = field(factory=lambda: types.MappingProxyType({}))
    """Set over the agent's environment (and its ``env``)."""
    home_files: Mapping[str, bytes] = field(factory=lambda: types.MappingProxyType({}))
    """Files shown read-only in the sandbox, by path under ``$HOME``: a wiring with any is
    applied in the sandbox only (outside it ralph would have to write the person's files)."""
    tool: str
    """How the CLI names a tool to its model, ``{}`` for the tool's name (``mcp__ralph__{}``):
    the prompt names the tools so."""


Wire: TypeAlias = Callable[[tuple[str, ...], Mapping[str, str], HomeReader], "Wired | str"]
"""The wiring of the server ``command`` (program first) for an agent with this environment:
:class:`Wired`, or why the CLI cannot take it here."""


@final
@frozen(kw_only=True)
class McpWiring:
    """How one CLI takes ralph's server."""

    how: str
    """How it is given, in ``ralph doctor``'s words (``--mcp-config``)."""
    wire: Wire


def json_object(data: str | bytes) -> dict[str, Any] | None:
    """The JSON object ``data`` holds (None: no JSON, or not an object)."""
    try:
        value = json.loads(data)
    # UnicodeDecodeError and JSONDecodeError are ValueErrors; a file an agent planted may
    # nest deeper than the parser recurses
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def toml_value(value: str | list[str]) -> str:
    """``value`` as a TOML string or array of strings: JSON's, with every character as it is
    (JSON's ``\\u`` escapes of an emoji are surrogates, which TOML refuses) but DEL, which
    TOML wants escaped and JSON leaves alone."""
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
