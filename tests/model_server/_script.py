"""What a scripted model is asked and what it answers, independent of any API (pure data).

A request from any agent CLI, in any of the APIs the server speaks, is read into one
:class:`ModelRequest`: the user's text, how many times the model has already answered in this
conversation, the last tool result, and the tools the client offers. A script is any callable
``(ModelRequest) -> ModelReply``; the reply says what to write, which actions to take (run a
shell command, write a file, call a named tool), what usage to report, or which error to answer
with. Each API's adapter turns the reply into that API's wire format, choosing the client's own
tool for an abstract action (``Shell`` becomes Claude Code's ``Bash``, Gemini CLI's
``run_shell_command``, ...; an :class:`McpCall` becomes the name the client gives an MCP
server's tool, such as ``mcp__ralph__emit``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, final

from attrs import field, frozen

__all__ = [
    "Action",
    "Api",
    "ApiError",
    "McpCall",
    "ModelReply",
    "ModelRequest",
    "Script",
    "Shell",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "WriteFile",
]


@enum.unique
class Api(enum.StrEnum):
    """The model APIs the server speaks."""

    ANTHROPIC = "anthropic"
    """The Anthropic Messages API (``POST /v1/messages``), used by Claude Code."""
    OPENAI_RESPONSES = "openai-responses"
    """The OpenAI Responses API (``POST /v1/responses``), used by Codex."""
    OPENAI_CHAT = "openai-chat"
    """OpenAI Chat Completions (``POST /v1/chat/completions``), used by OpenCode and aider."""
    GEMINI = "gemini"
    """The Gemini API (``:generateContent`` / ``:streamGenerateContent``), used by Gemini CLI."""


@final
@frozen(kw_only=True)
class ToolSpec:
    """A tool the client offers the model: its name and its JSON Schema of parameters."""

    name: str
    parameters: Mapping[str, Any] = field(factory=dict)
    namespace: str = ""
    """The namespace the tool is offered in (the Responses API's ``type: namespace``, as Codex
    offers an MCP server's tools), or empty."""


@final
@frozen(kw_only=True)
class ModelRequest:
    """One request to the model, read out of whichever API it came in."""

    api: Api
    model: str
    prompt: str
    """The text of every user message of the conversation, joined by blank lines (tool results
    and system text excluded): ralph's rendered prompt is in here."""
    turn: int
    """How many times the model has answered in this conversation before (0: the first call)."""
    last_tool_result: str | None
    """The output of the tool the model called last, when the latest message carries one."""
    tools: tuple[ToolSpec, ...]
    system: str = ""
    stream: bool = False
    body: Mapping[str, Any] = field(factory=dict, eq=False, repr=False)
    """The request as it arrived (JSON), for scripts that need more."""

    def offers(self, name: str) -> bool:
        """Whether the client offers a tool called ``name``."""
        return any(tool.name == name for tool in self.tools)


@final
@frozen
class Shell:
    """Run ``command`` in the client's shell tool (``Bash``, ``run_shell_command``, ...)."""

    command: str


@final
@frozen(kw_only=True)
class WriteFile:
    """Write ``content`` to ``path`` (relative to the agent's working directory) with the
    client's file-writing tool; for a client without tools (aider), as an edit block."""

    path: str
    content: str


@final
@frozen(kw_only=True)
class ToolCall:
    """Call the client's tool ``name`` with ``arguments`` as they are."""

    name: str
    arguments: Mapping[str, Any] = field(factory=dict)


@final
@frozen(kw_only=True)
class McpCall:
    """Call the tool ``tool`` of the client's MCP server ``server`` with ``arguments``, by the
    name the client gives it (``mcp__ralph__emit``, ``mcp_ralph_emit``, ``ralph_emit``, or
    ``emit`` in the namespace ``mcp__ralph``)."""

    tool: str
    arguments: Mapping[str, Any] = field(factory=dict)
    server: str = "ralph"


Action: TypeAlias = Shell | WriteFile | ToolCall | McpCall
"""Something the model asks the client to do."""


@final
@frozen(kw_only=True)
class Usage:
    """The token counts a reply reports (what the API's usage fields say)."""

    input_tokens: int = 100
    output_tokens: int = 20
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@final
@frozen(kw_only=True)
class ApiError:
    """Answer with an HTTP error instead of a reply (a rate limit is ``status=429``)."""

    status: int
    message: str
    retry_after_s: int | None = None
    fields: Mapping[str, Any] = field(factory=dict)
    """Fields added to the API's error object, replacing its own of the same name: e.g. a
    ChatGPT usage limit for Codex, ``{"type": "usage_limit_reached", "resets_at": EPOCH}``."""


@final
@frozen(kw_only=True)
class ModelReply:
    """What the model answers: text, then actions (tool calls), with ``usage``; or ``error``."""

    text: str = ""
    actions: tuple[Action, ...] = ()
    usage: Usage = Usage()
    error: ApiError | None = None
    chunk_delay_s: float = 0.0
    """Seconds to wait before each streamed chunk (a slow stream)."""
    headers: Mapping[str, str] = field(factory=dict)
    """Response headers sent besides the API's own, on a reply or an ``error`` alike (in any
    API): e.g. Anthropic's ``anthropic-ratelimit-unified-*`` usage-window headers, which
    Claude Code reads into its ``rate_limit_event``. One named like an API's own replaces it."""


Script: TypeAlias = Callable[[ModelRequest], ModelReply]
"""A scripted model: decides the reply to each request."""
