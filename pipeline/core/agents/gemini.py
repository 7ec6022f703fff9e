"""Gemini CLI, declared (pure): headless, the prompt on stdin and ``-p`` after it,
``--skip-trust`` (a fresh folder is not trusted, and yolo would be downgraded there),
``stream-json`` output. The reasons for every flag are in
``docs/architecture/agents/gemini.md``.

Its model endpoints are the Gemini API, Code Assist (a Google login) and the login's token
service; ``GOOGLE_GEMINI_BASE_URL`` (or ``CODE_ASSIST_ENDPOINT``, ``GOOGLE_VERTEX_BASE_URL``)
moves it. Vertex AI's regional hosts are named in ``[sandbox] allow``.

Usage: Usage from Gemini CLI's ``--output-format stream-json`` output (pure).

Gemini CLI prints one JSON object a line: ``init`` (``session_id``, ``model``), ``message``
(the user's prompt, then the assistant's text in ``delta`` pieces), ``tool_use`` and
``tool_result``, ``error`` (warnings), and last ``result`` with ``stats``: ``input_tokens``
(every prompt token, cached ones included), ``cached``, ``input`` (the tokens not read from a
cache), ``output_tokens``, ``duration_ms`` (the session's wall time, 0 when it failed) and
``models``, the same per model. It reports no cost: ``cost_usd`` stays None.

It reports no number of model turns either; each run of assistant lines (text and tool
calls) between the tool results is one model answer, so those runs are counted. Its stderr
(warnings, retry notices) is merged into the same log and skipped, as is anything that is not
a JSON object with a known ``type``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime, tzinfo
from pathlib import PurePosixPath
from typing import Any, Final

import attrs

from pipeline.core.agents._limits import (
    LimitSignal,
    classified,
    words,
)
from pipeline.core.agents._mcp import SERVER, HomeReader, McpWiring, Wired, json_object
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
from pipeline.core.agents._usage import UsageFigures, count, json_objects, mapping, tally
from pipeline.core.sandbox import ConfigFolder, Endpoint, SandboxPreset

__all__ = ["PRESET", "gemini_limit", "parse_gemini"]

_AUTO_MODELS: Final = frozenset({"", "auto"})
"""What ``init`` names when Gemini CLI routes each request to a model of its choosing."""


def _busiest_model(models: Any) -> str | None:
    """The model that used the most tokens, when the CLI routed requests to several."""
    if not isinstance(models, Mapping):
        return None
    totals = {
        name: tally(figures.get("total_tokens"))
        for name, figures in models.items()
        if isinstance(name, str) and isinstance(figures, Mapping)
    }
    return max(totals, key=totals.__getitem__) if totals else None


def _from_stats(stats: Mapping[str, Any]) -> UsageFigures:
    prompt = count(stats.get("input_tokens"))
    cached = count(stats.get("cached"))
    fresh = count(stats.get("input"))
    if fresh is None and prompt is not None:
        fresh = max(0, prompt - (cached or 0))
    return UsageFigures(
        model=_busiest_model(stats.get("models")),
        input_tokens=fresh,
        output_tokens=count(stats.get("output_tokens")),
        cache_read_tokens=cached,
        api_duration_ms=count(stats.get("duration_ms")) or None,
    )


def parse_gemini(lines: Iterable[bytes]) -> UsageFigures:
    """The usage Gemini CLI's stream-json output reports (every field None when it says
    nothing; the last ``result`` line counts)."""
    result: UsageFigures | None = None
    session_id: str | None = None
    init_model: str | None = None
    turns = 0
    answering = False
    for event in json_objects(lines):
        kind = event.get("type")
        if kind == "init":
            if isinstance(event.get("session_id"), str):
                session_id = event["session_id"]
            if isinstance(event.get("model"), str):
                init_model = event["model"]
        elif kind == "tool_use" or (kind == "message" and event.get("role") == "assistant"):
            if not answering:
                turns += 1
            answering = True
        elif kind == "tool_result" or (kind == "message" and event.get("role") == "user"):
            answering = False
        elif kind == "result" and isinstance(event.get("stats"), Mapping):
            result = _from_stats(event["stats"])
    figures = result or UsageFigures()
    model = init_model if init_model not in _AUTO_MODELS else None
    return attrs.evolve(
        figures,
        model=model or figures.model,
        turns=turns if (turns or result is not None) else None,
        session_id=session_id,
    )


def gemini_limit(lines: Iterable[bytes], now: datetime, zone: tzinfo) -> LimitSignal | None:
    """Gemini CLI's: the message of an error ``result`` (``Rate limit reached ... Suggested
    retry after 2s``, ``You have exhausted your daily quota``, ``The model is overloaded``)."""
    error = None
    for obj in json_objects(lines):
        if obj.get("type") == "result" and obj.get("status") == "error":
            error = words(mapping(obj.get("error")).get("message"))
    return None if not error else classified(error, "gemini result error", now, zone)


def _trusts(situation: Situation) -> bool:
    """Whether gemini's ``trustedFolders.json`` trusts the workspace (``TRUST_FOLDER`` on it
    or a folder above it, ``TRUST_PARENT`` on a folder beside or below its parent), or
    folder trust is off in its settings."""
    environ = situation.environ
    home = (environ.get("GEMINI_CLI_HOME") or environ.get("HOME") or "~").rstrip("/") + "/.gemini"
    settings = json_object(situation.read(f"{home}/settings.json") or b"") or {}
    if mapping(mapping(settings.get("security")).get("folderTrust")).get("enabled") is False:
        return True
    trusted = json_object(situation.read(f"{home}/trustedFolders.json") or b"") or {}
    here = PurePosixPath(situation.root)
    user = environ.get("HOME") or "~"
    for folder, level in trusted.items():
        named = str(folder)
        path = PurePosixPath(user + named[1:] if named.startswith("~") else named)
        base = path if level == "TRUST_FOLDER" else path.parent if level == "TRUST_PARENT" else None
        if base is not None and (here == base or base in here.parents):
            return True
    return False


def _untrusted(situation: Situation) -> tuple[str, str] | None:
    if "--skip-trust" in situation.argv or _trusts(situation):
        return None
    return (
        f"gemini does not trust {situation.root}: it exits 55 (and downgrades yolo approval)",
        f'[agents.{situation.name}] args = ["--skip-trust"], or trust the folder in gemini',
    )


_SETTINGS: Final = ".gemini/settings.json"
"""The person's settings, under ``$HOME``: the sandbox shows them with ralph's server added."""


def _mcp(command: tuple[str, ...], _environ: Mapping[str, str], read: HomeReader) -> Wired | str:
    """The person's settings plus ``mcpServers.ralph``, shown read-only in the sandbox: 0.61
    has no flag for a server, and skips a system settings file in a folder others can write.
    Outside the sandbox the only place left is the person's own file, which ralph never
    writes into; a missing one cannot be covered (bwrap would make it on the host), and the
    sandbox makes it ``{}`` before it starts (so that the agent cannot make it), which wires
    the next invocation."""
    data = read(_SETTINGS)
    settings = None if data is None else json_object(data)
    if settings is None:
        return f"~/{_SETTINGS} is missing, unreadable, a link or no plain JSON object"
    servers, policy = settings.get("mcpServers", {}), settings.get("mcp", {})
    if not isinstance(servers, dict) or not isinstance(policy, dict):
        return f"~/{_SETTINGS} has an mcpServers or mcp entry that is no object"
    excluded = policy.get("excluded")
    if isinstance(excluded, list) and SERVER in excluded:
        return f"~/{_SETTINGS} excludes the server {SERVER!r} (mcp.excluded)"
    allowed = policy.get("allowed")
    if isinstance(allowed, list):  # a list of servers allows only those
        settings = {**settings, "mcp": {**policy, "allowed": [*allowed, SERVER]}}
    server = {"command": command[0], "args": [*command[1:]], "trust": True}
    shown = {**settings, "mcpServers": {**servers, SERVER: server}}
    return Wired(
        tool=f"mcp_{SERVER}_{{}}", home_files={_SETTINGS: json.dumps(shown, indent=2).encode()}
    )


PRESET: Final = AgentPreset(
    name="gemini",
    argv=(
        "gemini",
        "--skip-trust",
        "--approval-mode",
        "yolo",
        "--output-format",
        "stream-json",
        "-p",
        "Carry out the instructions given above.",
    ),
    prompt_via=PromptVia.STDIN,
    output=OutputFormat(name="gemini-stream-json", usage=parse_gemini, limit=gemini_limit),
    sandbox=SandboxPreset(
        folders=(
            ConfigFolder(
                default=".gemini",
                read_only=("settings.json", "commands", "extensions", "GEMINI.md"),
            ),
        ),
        pass_env=("GEMINI_*", "GOOGLE_*"),
    ),
    endpoints=ModelEndpoints(
        defaults=(
            PROVIDER_HOSTS["google"],
            # a Google login's requests, and its token (measured with 0.61.0)
            Endpoint("cloudcode-pa.googleapis.com", HTTPS),
            Endpoint("oauth2.googleapis.com", HTTPS),
        ),
        variables=("GOOGLE_GEMINI_BASE_URL", "CODE_ASSIST_ENDPOINT", "GOOGLE_VERTEX_BASE_URL"),
    ),
    install="install Gemini CLI: npm install -g @google/gemini-cli",
    hints=(
        FailureHint(
            pattern=rb"not running in a trusted (?:directory|folder)",
            says="gemini does not trust this folder: give it --skip-trust (the gemini preset does)",
            ignore_case=True,
        ),
        FailureHint(
            pattern=rb"must specify the GEMINI_API_KEY|Invalid auth method selected",
            says="gemini has no usable credentials: set GEMINI_API_KEY (or its auth settings)",
        ),
    ),
    pitfalls=(Pitfall(found=_untrusted),),
    workspace_code=(".gemini",),  # a trusted folder's settings.json, commands and extensions
    mcp=McpWiring(how="its settings, in the sandbox only", wire=_mcp),
)
"""Gemini CLI."""
