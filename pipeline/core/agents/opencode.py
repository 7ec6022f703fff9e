"""OpenCode, declared (pure): ``opencode run --format json`` with the message first and the
prompt on stdin. The reasons for every flag are in ``docs/architecture/agents/opencode.md``.

It names a model ``provider/model`` (``anthropic/sonnet-4-5``): the sandbox lets it
reach that provider's host (``ANTHROPIC_BASE_URL`` and ``OPENAI_BASE_URL`` move theirs, as
the SDK it bundles reads them). A provider its ``opencode.json`` defines is not read: name
its host in ``[sandbox] allow``.

Usage: Usage from ``opencode run --format json`` (pure).

opencode prints one JSON event per line. Each model request of the session ends with a
``step_finish`` event whose ``part`` holds ``tokens`` (``input``, ``output``, ``reasoning``,
``cache.read``, ``cache.write``) and ``cost``; ``sessionID`` names the session. ``input``
already leaves out the tokens read from or written to the cache, and ``output`` leaves out
the reasoning tokens, which are billed as output, so they are added to it. The steps are
summed; each is one turn.

opencode prices a request from its own model table; a model it has no price for (any custom
provider's model without ``cost`` in ``opencode.json``) costs ``0``. A total of 0 therefore
says nothing and is not reported (``cost_usd`` None): only a positive cost is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Final

from pipeline.core.agents._limits import (
    BUSY_STATUSES,
    USAGE_WORDS,
    LimitSignal,
    words,
)
from pipeline.core.agents._mcp import SERVER, HomeReader, McpWiring, Wired, json_object
from pipeline.core.agents._preset import (
    AgentPreset,
    ModelEndpoints,
    OutputFormat,
    PromptVia,
)
from pipeline.core.agents._providers import HTTPS, Provider, providers
from pipeline.core.agents._usage import UsageFigures, json_objects, mapping, number, tally
from pipeline.core.sandbox import ConfigFolder, Endpoint, SandboxPreset
from pipeline.events import LimitScope

__all__ = ["PRESET", "opencode_limit", "opencode_provider", "parse_opencode"]


def parse_opencode(lines: Iterable[bytes]) -> UsageFigures:
    """The usage opencode's JSON events report (every field None when it says nothing)."""
    steps = 0
    input_tokens = output_tokens = cache_read = cache_write = 0
    cost = 0.0
    session: str | None = None
    for event in json_objects(lines):
        if session is None and isinstance(event.get("sessionID"), str):
            session = event["sessionID"]
        part = event.get("part")
        if event.get("type") != "step_finish" or not isinstance(part, Mapping):
            continue
        tokens = part.get("tokens")
        if not isinstance(tokens, Mapping):
            continue
        steps += 1
        cache = mapping(tokens.get("cache"))
        input_tokens += tally(tokens.get("input"))
        output_tokens += tally(tokens.get("output")) + tally(tokens.get("reasoning"))
        cache_read += tally(cache.get("read"))
        cache_write += tally(cache.get("write"))
        cost += number(part.get("cost")) or 0.0
    if not steps:
        return UsageFigures(session_id=session)
    return UsageFigures(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        turns=steps,
        session_id=session,
        cost_usd=cost if cost > 0 else None,
    )


def opencode_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """OpenCode's: its last ``error`` event that is an ``APIError`` with ``statusCode`` 429,
    503 or 529; the provider's ``retry-after`` header (seconds) is the reset, and a message
    speaking of a quota or usage limit makes it a usage window."""
    found = None
    for obj in json_objects(lines):
        if obj.get("type") == "error":
            error = mapping(obj.get("error"))
            data = mapping(error.get("data"))
            if error.get("name") == "APIError" and data.get("statusCode") in BUSY_STATUSES:
                found = data
    if found is None:
        return None
    message = words(found.get("message"))
    after = mapping(found.get("responseHeaders")).get("retry-after")
    delay = after.strip() if isinstance(after, str) else ""
    reset = now + timedelta(seconds=int(delay)) if delay.isdigit() else None
    scope = LimitScope.USAGE_WINDOW if USAGE_WORDS.search(message) else LimitScope.REQUESTS
    source = f"opencode error statusCode {found.get('statusCode')}"
    return LimitSignal(scope=scope, resets_at=reset, window=None, source=source, message=message)


def opencode_provider(model: str) -> str | None:
    """The provider id of an OpenCode model (``anthropic/sonnet-4-5`` is
    ``anthropic``), or None when the name has no provider part."""
    provider, slash, _ = model.partition("/")
    return provider if slash and provider else None


_PROVIDERS: Final = providers(
    {"anthropic": ("ANTHROPIC_BASE_URL",), "openai": ("OPENAI_BASE_URL",)},
    # OpenCode's own gateway (Zen), its default with no model named
    opencode=Provider(host=Endpoint("opencode.ai", HTTPS)),
)

_CODE: Final = ("opencode.json", "opencode.jsonc", "plugin", "agent", "command")


def _mcp(command: tuple[str, ...], environ: Mapping[str, str], _read: HomeReader) -> Wired | str:
    """``OPENCODE_CONFIG_CONTENT`` with the server, merged into the one the agent's
    environment sets (it wins over a project's ``opencode.json`` for the same name)."""
    own = environ.get("OPENCODE_CONFIG_CONTENT", "").strip() or "{}"
    config = json_object(own)
    servers = {} if config is None else config.get("mcp", {})
    if config is None or not isinstance(servers, dict):
        return "its OPENCODE_CONFIG_CONTENT is no JSON object with an mcp table ralph can add to"
    server = {"type": "local", "command": [*command], "enabled": True}
    merged = {**config, "mcp": {**servers, SERVER: server}}
    return Wired(tool=f"{SERVER}_{{}}", env={"OPENCODE_CONFIG_CONTENT": json.dumps(merged)})


PRESET: Final = AgentPreset(
    name="opencode",
    argv=(
        "opencode",
        "run",
        "--format",
        "json",
        "--title",
        "ralph",
        "Carry out the instructions below.",
    ),
    prompt_via=PromptVia.STDIN,
    output=OutputFormat(name="opencode-json", usage=parse_opencode, limit=opencode_limit),
    sandbox=SandboxPreset(
        folders=(
            ConfigFolder(
                default=".config/opencode",
                variable="XDG_CONFIG_HOME",
                suffix="opencode",
                read_only=_CODE,
            ),
            ConfigFolder(
                default=".local/share/opencode", variable="XDG_DATA_HOME", suffix="opencode"
            ),
            ConfigFolder(default=".cache/opencode", variable="XDG_CACHE_HOME", suffix="opencode"),
            ConfigFolder(
                default=".local/state/opencode", variable="XDG_STATE_HOME", suffix="opencode"
            ),
        ),
        pass_env=("OPENCODE_*",),
    ),
    endpoints=ModelEndpoints(
        defaults=(_PROVIDERS["opencode"].host,),
        providers=_PROVIDERS,
        provider_of=opencode_provider,
    ),
    install="install OpenCode: npm install -g opencode-ai",
    # The project's config (MCP servers, plugins, agents and commands), loaded from $PWD.
    workspace_code=("opencode.json", "opencode.jsonc", ".opencode"),
    mcp=McpWiring(how="OPENCODE_CONFIG_CONTENT", wire=_mcp),
)
"""OpenCode."""
