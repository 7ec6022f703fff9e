"""Codex, declared (pure): ``codex exec --json`` with ``-`` (the prompt on stdin) in the
``workspace-write`` sandbox. The reasons for every flag are in
``docs/architecture/agents/codex.md``.

Its model endpoints are OpenAI's API, ChatGPT's (a ChatGPT login) and the login's token
refresh. A provider of its own ``config.toml`` (``model_providers``) is not read: name its
host in ``[sandbox] allow`` and its key variable (``env_key``) in ``pass_env``.

Usage: Usage from ``codex exec --json`` output (pure).

Codex prints one JSON event per line. ``thread.started`` names the thread (the session id a
``codex exec resume`` takes); each ``turn.completed`` carries the usage of that turn, summed
over its model requests: ``input_tokens`` (cached tokens included, as the OpenAI API counts
them), ``cached_input_tokens``, ``cache_write_input_tokens`` (zero for the OpenAI API),
``output_tokens`` and ``reasoning_output_tokens`` (part of the output). A ``codex exec`` is
one turn, a resumed or continued one more; the turns and their usage are summed. Codex reports
neither a cost nor the model in this output, nor how long the API took.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from typing import Final

from pipeline.core.agents._limits import (
    LimitSignal,
    classified,
    words,
)
from pipeline.core.agents._mcp import SERVER, HomeReader, McpWiring, Wired, toml_value
from pipeline.core.agents._preset import (
    AgentPreset,
    ModelEndpoints,
    OutputFormat,
    Pitfall,
    PromptVia,
    Situation,
)
from pipeline.core.agents._providers import HTTPS, PROVIDER_HOSTS
from pipeline.core.agents._usage import UsageFigures, json_objects, mapping, tally
from pipeline.core.sandbox import ConfigFolder, Endpoint, SandboxPreset

__all__ = ["PRESET", "codex_limit", "parse_codex"]


def parse_codex(lines: Iterable[bytes]) -> UsageFigures:
    """The usage ``codex exec --json`` output reports (every field None when it says nothing).

    Input tokens are those not read from (nor written to) a cache: Codex's ``input_tokens``
    less ``cached_input_tokens`` and ``cache_write_input_tokens``.
    """
    session_id: str | None = None
    turns = 0
    uncached = cached = written = output = 0
    for event in json_objects(lines):
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            session_id = session_id or event["thread_id"]
        elif kind == "turn.completed":
            turns += 1
            usage = mapping(event.get("usage"))
            read = tally(usage.get("cached_input_tokens"))
            wrote = tally(usage.get("cache_write_input_tokens"))
            uncached += max(0, tally(usage.get("input_tokens")) - read - wrote)
            cached += read
            written += wrote
            output += tally(usage.get("output_tokens"))
    if not turns:
        return UsageFigures(session_id=session_id)
    return UsageFigures(
        input_tokens=uncached,
        output_tokens=output,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        turns=turns,
        session_id=session_id,
    )


def codex_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Codex's: the message of its last ``turn.failed`` (``exceeded retry limit, last status:
    429``, ``You've hit your usage limit ... try again at 9:21 PM``, ``Quota exceeded``)."""
    failed = None
    for obj in json_objects(lines):
        if obj.get("type") == "turn.failed":
            failed = words(mapping(obj.get("error")).get("message"))
    return None if not failed else classified(failed, "codex turn.failed", now, zone)


def _profile_resets_path(situation: Situation) -> tuple[str, str] | None:
    """Codex runs commands with ``bash -lc``: a login shell's ``/etc/profile`` that sets PATH
    outright (Debian's does) hides ``ralph`` from them."""
    text = (situation.read("/etc/profile") or b"").decode("utf-8", "replace")
    if not any(line.strip().startswith(("PATH=", "export PATH=")) for line in text.splitlines()):
        return None
    return (
        "codex runs commands with bash -lc, and /etc/profile resets PATH: a bare "
        "`ralph emit` is not found, so topics are lost",
        'agents must call "$RALPH_BIN" emit (ralph sets RALPH_BIN)',
    )


def _mcp(command: tuple[str, ...], _environ: Mapping[str, str], _read: HomeReader) -> Wired:
    """``-c`` overrides naming the server, with its tools approved (0.169 otherwise refuses
    each call: "requires approval, but approval policy is never"). Codex passes its server
    only ``HOME``, ``PATH`` and a short list: the card is in the argv."""
    table = f"mcp_servers.{SERVER}"
    return Wired(
        tool=f"mcp__{SERVER}.{{}}",  # its model sees the namespace mcp__ralph with each tool
        argv=(
            "-c",
            f"{table}.command={toml_value(command[0])}",
            "-c",
            f"{table}.args={toml_value([*command[1:]])}",
            "-c",
            f'{table}.default_tools_approval_mode="approve"',
        ),
    )


PRESET: Final = AgentPreset(
    name="codex",
    argv=("codex", "exec", "--json", "--sandbox", "workspace-write", "-"),
    prompt_via=PromptVia.STDIN,
    output=OutputFormat(name="codex-json", usage=parse_codex, limit=codex_limit),
    sandbox=SandboxPreset(
        folders=(
            ConfigFolder(
                default=".codex",
                variable="CODEX_HOME",
                read_only=("config.toml", "AGENTS.md", "prompts", "rules"),
            ),
        ),
        pass_env=("OPENAI_*", "CODEX_*"),
    ),
    # no variable: Codex 0.169 ignores OPENAI_BASE_URL (measured), only its config moves it
    endpoints=ModelEndpoints(
        defaults=(
            PROVIDER_HOSTS["openai"],
            Endpoint("chatgpt.com", HTTPS),
            Endpoint("auth.openai.com", HTTPS),
        ),
    ),
    install="install Codex: npm install -g @openai/codex",
    pitfalls=(Pitfall(found=_profile_resets_path, fails=False),),
    workspace_code=(".codex",),  # a trusted project's config.toml (MCP servers among it)
    mcp=McpWiring(how="-c mcp_servers.ralph", wire=_mcp),
)
"""Codex."""
