"""Claude Code, declared (pure): print mode (``-p``) reading the prompt on stdin,
``stream-json`` output (with ``--verbose``), edits accepted and the tools it needs allowed by
name, which works as root (bypass mode refuses root outside a sandbox). The reasons for every
flag are in ``docs/architecture/agents/claude.md``.

Usage: Usage from Claude Code's ``stream-json`` output (pure).

Claude Code in print mode with ``--output-format stream-json --verbose`` writes one JSON
object per line: a ``system`` line (subtype ``init``) naming the session and the model, one
``assistant`` line per content block the model sent, ``user`` lines with tool results, and at
the end one ``result`` line with the totals of the invocation: ``usage`` (``input_tokens``
not read from cache, as the Messages API counts them, ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``), ``num_turns``,
``duration_api_ms``, ``session_id`` and ``total_cost_usd``, which the CLI computes itself.
A ``system`` line of subtype ``api_retry`` tells of a failed request Claude Code retries itself
(``error_status``, ``retry_delay_ms``): a run's slow invocation says why.

Without a ``result`` line (the agent was killed or timed out) the input and cache tokens are
added up over the distinct messages of the ``assistant`` lines, which carry the usage the
stream started with; their output counts are not final, so output, cost and turns (Claude
Code counts a turn per tool result, not per request) are not reported. A model of
``<synthetic>`` is Claude Code's own stand-in for a failed request, not a model.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from typing import Any, Final

import attrs
import orjson

from pipeline.core.agents._limits import (
    BUSY_STATUSES,
    LimitSignal,
    WindowSignal,
    epoch,
    words,
)
from pipeline.core.agents._mcp import SERVER, HomeReader, McpWiring, Wired
from pipeline.core.agents._preset import (
    AgentPreset,
    FailureHint,
    ModelEndpoints,
    OutputFormat,
    Pitfall,
    PromptVia,
    Situation,
)
from pipeline.core.agents._providers import HTTPS, PROVIDER_HOSTS
from pipeline.core.agents._usage import UsageFigures, count, json_objects, mapping, number, tally
from pipeline.core.sandbox import ConfigFolder, Endpoint, SandboxPreset
from pipeline.events import LimitScope

__all__ = ["BYPASS_FLAGS", "PRESET", "claude_limit", "claude_window", "parse_claude"]


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _model(value: Any) -> str | None:
    name = _text(value)
    return None if name is None or name.startswith("<") else name


def _from_result(result: Mapping[str, Any], model: str | None) -> UsageFigures:
    usage = mapping(result.get("usage"))
    return UsageFigures(
        model=model,
        input_tokens=count(usage.get("input_tokens")),
        output_tokens=count(usage.get("output_tokens")),
        cache_read_tokens=count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=count(usage.get("cache_creation_input_tokens")),
        turns=count(result.get("num_turns")),
        session_id=_text(result.get("session_id")),
        api_duration_ms=count(result.get("duration_api_ms")),
        cost_usd=number(result.get("total_cost_usd")),
    )


def _from_messages(
    messages: Mapping[str, Mapping[str, Any]], model: str | None, session: str | None
) -> UsageFigures:
    if not messages:
        return UsageFigures(model=model, session_id=session)

    def total(key: str) -> int | None:
        counts = [count(usage.get(key)) for usage in messages.values()]
        return None if any(c is None for c in counts) else sum(c for c in counts if c)

    return UsageFigures(
        model=model,
        input_tokens=total("input_tokens"),
        cache_read_tokens=total("cache_read_input_tokens"),
        cache_write_tokens=total("cache_creation_input_tokens"),
        session_id=session,
    )


def parse_claude(lines: Iterable[bytes]) -> UsageFigures:
    """The usage Claude Code's ``stream-json`` output reports (every field None when it says
    nothing); never raises on what the agent printed."""
    model: str | None = None
    session: str | None = None
    result: Mapping[str, Any] | None = None
    messages: dict[str, Mapping[str, Any]] = {}
    statuses: list[int | None] = []
    waited = 0
    for record in json_objects(lines):
        kind = record.get("type")
        if kind == "system" and record.get("subtype") == "init":
            model = _model(record.get("model")) or model
            session = _text(record.get("session_id")) or session
        elif kind == "system" and record.get("subtype") == "api_retry":
            # Claude Code retrying a failed request itself (a 429, a 529) before it answers.
            statuses.append(count(record.get("error_status")))
            waited += tally(record.get("retry_delay_ms"))
        elif kind == "assistant" and record.get("parent_tool_use_id") is None:
            # The main conversation only: a subagent's messages are in the result's totals.
            message = mapping(record.get("message"))
            model = _model(message.get("model")) or model
            ident = _text(message.get("id"))
            if ident is not None and _model(message.get("model")) is not None:
                messages[ident] = mapping(message.get("usage"))
        elif kind == "result":
            result = record
    figures = (
        _from_result(result, model)
        if result is not None
        else _from_messages(messages, model, session)
    )
    if not statuses:
        return figures
    return attrs.evolve(figures, own_retries=tuple(statuses), own_retry_wait_ms=waited)


def _report(figures: UsageFigures) -> str:
    """The ``system`` (``init``) and ``result`` lines Claude Code's ``stream-json`` output
    holds for an invocation that used ``figures`` (its own retries left out)."""
    init = {"type": "system", "subtype": "init", "model": figures.model}
    usage = {
        "input_tokens": figures.input_tokens,
        "output_tokens": figures.output_tokens,
        "cache_read_input_tokens": figures.cache_read_tokens,
        "cache_creation_input_tokens": figures.cache_write_tokens,
    }
    result = {
        "type": "result",
        "subtype": "success",
        "num_turns": figures.turns,
        "session_id": figures.session_id,
        "duration_api_ms": figures.api_duration_ms,
        "total_cost_usd": figures.cost_usd,
        "usage": usage,
    }
    return orjson.dumps(init).decode() + "\n" + orjson.dumps(result).decode()


def claude_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Claude Code's: an error ``result`` with ``api_error_status`` 429, 529 or 503, or
    ``api_error`` ``usage_limit_reached``; a ``rate_limit_event`` whose status is
    ``rejected`` names the window (``rateLimitType``) and its reset (``resetsAt``)."""
    rejected: Mapping[str, Any] | None = None
    result: Mapping[str, Any] | None = None
    for obj in json_objects(lines):
        if obj.get("type") == "rate_limit_event":
            info = mapping(obj.get("rate_limit_info"))
            if info.get("status") == "rejected":
                rejected = info
        elif obj.get("type") == "result":
            result = obj
    if result is None or result.get("is_error") is not True:
        return None
    status = result.get("api_error_status")
    scope, resets_at, window = LimitScope.USAGE_WINDOW, None, None
    if rejected is not None:
        named = rejected.get("rateLimitType")
        resets_at = epoch(rejected.get("resetsAt"))
        window = named if isinstance(named, str) and named else None
        source = "claude rate_limit_event"
    elif result.get("api_error") == "usage_limit_reached":
        source = "claude result api_error"
    elif status in BUSY_STATUSES:
        scope, source = LimitScope.REQUESTS, f"claude result api_error_status {status}"
    else:
        return None
    message = words(result.get("result"))
    return LimitSignal(
        scope=scope, resets_at=resets_at, window=window, source=source, message=message
    )


def claude_window(lines: Iterable[bytes]) -> WindowSignal | None:
    """Claude Code's: the fullest window of its last ``rate_limit_event`` (``unifiedWindows``,
    each with its ``utilization`` and ``resetsAt``), which it prints on successful replies too
    whenever the provider's limits change."""
    windows: Mapping[str, Any] = {}
    # Read after every invocation, whose log the usage parser has just read whole: only the
    # lines that can be one are parsed.
    for obj in json_objects(line for line in lines if b"rate_limit_event" in line):
        if obj.get("type") == "rate_limit_event":
            windows = mapping(mapping(obj.get("rate_limit_info")).get("unifiedWindows"))
    found = [
        WindowSignal(
            window=name, utilization=share, resets_at=epoch(mapping(window).get("resetsAt"))
        )
        for name, window in windows.items()
        if isinstance(name, str)
        and (share := number(mapping(window).get("utilization"), high=100)) is not None
    ]
    return max(found, key=lambda w: w.utilization, default=None)


BYPASS_FLAGS: Final = (
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
)
"""Claude Code's flags that turn its permission checks off; as root it refuses them."""


def _bypasses_permissions(argv: Iterable[str]) -> bool:
    """Whether Claude Code arguments ask for its bypass mode (which it refuses as root)."""
    args = tuple(argv)
    if any(arg in BYPASS_FLAGS for arg in args):
        return True
    if "--permission-mode=bypassPermissions" in args:
        return True
    return any(
        arg == "--permission-mode" and value == "bypassPermissions"
        for arg, value in itertools.pairwise(args)
    )


def _as_root(situation: Situation) -> tuple[str, str] | None:
    # Claude Code's own test: root, and neither IS_SANDBOX=1 nor its bubblewrap sandbox.
    environ = situation.environ
    if not situation.is_root or environ.get("IS_SANDBOX") == "1":
        return None
    if environ.get("CLAUDE_CODE_BUBBLEWRAP", "") not in ("", "0", "false"):
        return None
    if not _bypasses_permissions(situation.argv):
        return None
    name = situation.name
    return (
        f"agent {name!r}: Claude Code refuses --dangerously-skip-permissions (bypassPermissions) "
        "as root and exits at once; in a sandbox (a container, CI) set "
        f'[agents.{name}] env = {{ IS_SANDBOX = "1" }}, or run ralph as a normal user, or drop '
        'that flag for the "claude" preset\'s (--permission-mode acceptEdits '
        "--allowedTools=Bash,Edit,Write,Read), which works as root",
        "as the line says",
    )


def _mcp(command: tuple[str, ...], _environ: Mapping[str, str], _read: HomeReader) -> Wired:
    """``--mcp-config`` with the server (``alwaysLoad``: without it 2.1.328 hides the tools
    behind its tool search), and its tools allowed beside the preset's (repeats add up)."""
    server = {"type": "stdio", "command": command[0], "args": [*command[1:]], "alwaysLoad": True}
    config = orjson.dumps({"mcpServers": {SERVER: server}}).decode()
    return Wired(
        tool=f"mcp__{SERVER}__{{}}",
        argv=(f"--mcp-config={config}", f"--allowedTools=mcp__{SERVER}"),
    )


PRESET: Final = AgentPreset(
    name="claude",
    argv=(
        "claude",
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools=Bash,Edit,Write,Read",
    ),
    prompt_via=PromptVia.STDIN,
    output=OutputFormat(
        name="claude-stream-json",
        usage=parse_claude,
        limit=claude_limit,
        window=claude_window,
        report=_report,
    ),
    sandbox=SandboxPreset(
        folders=(
            ConfigFolder(
                default=".claude",
                variable="CLAUDE_CONFIG_DIR",
                read_only=(
                    "settings.json",
                    "settings.local.json",
                    "commands",
                    "agents",
                    "hooks",
                    "plugins",
                    "CLAUDE.md",
                ),
            ),
        ),
        files=(".claude.json",),
        pass_env=("ANTHROPIC_*", "CLAUDE_CODE_*", "CLAUDE_CONFIG_DIR", "DISABLE_*", "IS_SANDBOX"),
    ),
    endpoints=ModelEndpoints(
        # the API, and where a subscription login refreshes its token (2.1.328's TOKEN_URL)
        defaults=(PROVIDER_HOSTS["anthropic"], Endpoint("platform.claude.com", HTTPS)),
        variables=("ANTHROPIC_BASE_URL",),
    ),
    install="install Claude Code: npm install -g @anthropic-ai/claude-code",
    hints=(
        FailureHint(
            pattern=rb"cannot be used with root/sudo privileges",
            says="claude refuses --dangerously-skip-permissions as root: run ralph as a normal "
            'user, or, inside a sandbox, set env = { IS_SANDBOX = "1" } under [agents.NAME]',
        ),
    ),
    pitfalls=(Pitfall(found=_as_root, blocks_run=True),),
    # ``.mcp.json`` starts its servers even in print mode, and the settings can approve them
    # all (``enableAllProjectMcpServers``) or add hooks for the person's later session.
    workspace_code=(
        ".claude/commands",
        ".claude/agents",
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".mcp.json",
    ),
    mcp=McpWiring(how="--mcp-config", wire=_mcp),
)
"""Claude Code."""
