"""The model endpoints of Claude Code, Codex and Gemini CLI, found where each CLI finds its base
URL (I/O: reads their settings files).

Each order below is the CLI's own, measured with the pinned version
(``tests.agent_clis``) against two scripted model servers, one named by each
place, or read in its source; it is not always "variables, then files":

- Claude Code (2.1.328) applies its settings files' ``env`` over its environment, the
  workspace's ``.claude/settings.local.json`` over ``.claude/settings.json`` over the user's.
- Codex (0.169.0) takes its base URL from ``config.toml`` only: ``OPENAI_BASE_URL`` is ignored.
- Gemini CLI (0.61.0) takes a variable from the environment before the first ``.env`` file it
  finds, and the host from its auth type (an API key, Google login, Vertex AI).

A subscription login (Claude Code's claude.ai login, Codex's ChatGPT login, Gemini CLI's
Google login) also needs the host its CLI refreshes the token at (``_LOGIN_REFRESH``). It is
allowed only beside the vendor's own API host, which such a login is for: a custom base URL
is taken for a gateway or a local server with a key of its own. A login behind one still
refreshes (Claude Code 2.1.328 did, measured): ``allow`` names the host then.

Codex also reads its provider's key from a variable ``config.toml`` names (``env_key``, and
``env_http_headers``' values): :func:`codex_variables` names them, so the sandbox passes them.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import SANDBOX_PRESETS, Endpoint, SandboxError
from pipeline.handlers.sandbox._cli_config import (
    AgentSetup,
    Source,
    Variables,
    dig,
    endpoint_in,
    is_variable_name,
    read_dotenv,
    read_json,
    read_toml,
)

__all__ = ["claude_endpoints", "codex_endpoints", "codex_variables", "gemini_endpoints"]

_ANTHROPIC_BASE_URL: Final = "ANTHROPIC_BASE_URL"

_CODEX_OSS_PORTS: Final[Mapping[str, int]] = {"ollama": 11434, "lmstudio": 1234}
"""Codex's built-in local providers and their default ports (``CODEX_OSS_PORT`` moves them)."""
_CODEX_BUILT_IN: Final = frozenset({"openai", "amazon-bedrock", *_CODEX_OSS_PORTS})
"""Provider ids the config cannot redefine: Codex keeps its own entry for them."""

_LOGIN_REFRESH: Final[Mapping[str, tuple[tuple[str, ...], Endpoint]]] = {
    # 2.1.328 binary: TOKEN_URL:"https://platform.claude.com/v1/oauth/token"
    "claude": ((), Endpoint("platform.claude.com", 443)),
    # 0.169.0 binary: "https://auth.openai.com/oauth/token"; the variable moves it (measured)
    "codex": (("CODEX_REFRESH_TOKEN_URL_OVERRIDE",), Endpoint("auth.openai.com", 443)),
    # google-auth-library 10.9.0 in Gemini CLI 0.61.0's bundle: oauth2TokenUrl; its
    # tokeninfo, on the same host, is asked at every start (measured)
    "gemini": ((), Endpoint("oauth2.googleapis.com", 443)),
}
"""Where each CLI refreshes a subscription login's token, by preset: the variables that move
it (first first) and its host otherwise. Each was measured with the pinned CLI, an expired
login and a proxy that logged and refused every connection."""

_CODE_ASSIST: Final = Endpoint("cloudcode-pa.googleapis.com", 443)
"""Where Gemini CLI sends a Google login's requests (its ``CODE_ASSIST_ENDPOINT``)."""
_GOOGLE_LOGINS: Final = frozenset({"oauth-personal", "compute-default-credentials"})
_VERTEX_REGIONAL: Final[Mapping[str, Endpoint]] = {
    "us": Endpoint("aiplatform.us.rep.googleapis.com", 443),
    "eu": Endpoint("aiplatform.eu.rep.googleapis.com", 443),
}
_VERTEX_GLOBAL: Final = Endpoint("aiplatform.googleapis.com", 443)


def _one(found: Endpoint | None, otherwise: tuple[Endpoint, ...]) -> tuple[Endpoint, ...]:
    return (found,) if found is not None else otherwise


def _with_login(
    preset: str, hosts: tuple[Endpoint, ...], variables: Variables
) -> tuple[Endpoint, ...]:
    """``hosts``, the vendor's own, and where ``preset``'s CLI refreshes a login's token."""
    names, default = _LOGIN_REFRESH[preset]
    moved = variables.endpoint(names)
    return (*hosts, default if moved is None else moved)


def claude_endpoints(setup: AgentSetup) -> tuple[Endpoint, ...]:
    """Claude Code's: ``env.ANTHROPIC_BASE_URL`` in the workspace's
    ``.claude/settings.local.json``, its ``.claude/settings.json``, the user's
    ``settings.json`` (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``), then ``ANTHROPIC_BASE_URL``,
    else ``api.anthropic.com:443`` and its login's ``platform.claude.com:443``."""
    preset = SANDBOX_PRESETS["claude"]
    user = Path(preset.folders[0].locate(setup.environ, setup.home)) / "settings.json"
    project = () if setup.workspace is None else (setup.workspace / ".claude",)
    files = (
        *(folder / name for folder in project for name in ("settings.local.json", "settings.json")),
        user,
    )
    for file in files:
        where = f"{file}: env.{_ANTHROPIC_BASE_URL}"
        found = endpoint_in(dig(read_json(file), "env", _ANTHROPIC_BASE_URL), where)
        if found is not None:
            return (found,)
    found = setup.variables.endpoint((_ANTHROPIC_BASE_URL,))
    if found is not None:
        return (found,)
    return _with_login("claude", preset.base_url.defaults, setup.variables)


def _codex_selected(config: Mapping[str, object]) -> str | None:
    """The provider ``config.toml`` selects: its profile's ``model_provider`` (``profile =
    "name"``), else the top-level one."""
    profile = config.get("profile")
    chosen = (
        dig(config, "profiles", profile, "model_provider") if isinstance(profile, str) else None
    )
    for value in (chosen, config.get("model_provider")):
        if isinstance(value, str) and value:
            return value
    return None


def _codex_oss_port(variables: Variables, default: int) -> int:
    """``CODEX_OSS_PORT`` when it is a port number, else ``default`` (as Codex reads it)."""
    found = variables.value("CODEX_OSS_PORT")
    text = "" if found is None else found[0]
    if text.isascii() and text.isdigit() and 0 < int(text) < 65536:
        return int(text)
    return default


def _codex_provider(
    name: str, config: Mapping[str, object], file: Path, variables: Variables
) -> tuple[Endpoint, ...]:
    defaults = SANDBOX_PRESETS["codex"].base_url.defaults
    if name == "openai":
        found = endpoint_in(config.get("openai_base_url"), f"{file}: openai_base_url")
        return (found,) if found is not None else _with_login("codex", defaults, variables)
    if name in _CODEX_OSS_PORTS:
        local = Endpoint("localhost", _codex_oss_port(variables, _CODEX_OSS_PORTS[name]))
        return _one(variables.endpoint(("CODEX_OSS_BASE_URL",)), (local,))
    if name in _CODEX_BUILT_IN:
        # amazon-bedrock: its host is built from an AWS region, which only allow can name
        return ()
    provider = dig(config, "model_providers", name)
    if not isinstance(provider, Mapping):
        return ()  # Codex refuses to start with a provider it does not know
    where = f"{file}: model_providers.{name}.base_url"
    found = endpoint_in(provider.get("base_url"), where)
    # without a base_url Codex sends the provider's requests where it sends OpenAI's
    return (found,) if found is not None else _with_login("codex", defaults, variables)


def _codex_config(setup: AgentSetup) -> tuple[Path, Mapping[str, object]]:
    """Codex's ``config.toml`` (``$CODEX_HOME`` or ``~/.codex``) and its table (empty when
    it cannot be read)."""
    folder = Path(SANDBOX_PRESETS["codex"].folders[0].locate(setup.environ, setup.home))
    file = folder / "config.toml"
    return file, read_toml(file) or {}


def _codex_providers(config: Mapping[str, object]) -> list[str]:
    """The providers an agent may use: the one ``config`` selects, or, with none selected,
    the built-in ``openai`` and every provider it defines."""
    selected = _codex_selected(config)
    if selected is not None:
        return [selected]
    defined = dig(config, "model_providers")
    names = (
        [name for name in defined if name not in _CODEX_BUILT_IN]
        if isinstance(defined, Mapping)
        else []
    )
    return ["openai", *names]


def codex_endpoints(setup: AgentSetup) -> tuple[Endpoint, ...]:
    """Codex's: the provider ``config.toml`` (``$CODEX_HOME`` or ``~/.codex``) selects, or,
    with none selected, the built-in ``openai`` and every provider the file defines.

    ``openai`` is ``openai_base_url``, else ``api.openai.com:443`` and ``chatgpt.com:443``
    (an API key or a ChatGPT login; which one is in ``auth.json``, which is not read) and the
    login's ``auth.openai.com:443`` (``CODEX_REFRESH_TOKEN_URL_OVERRIDE`` moves it). A
    defined provider is its ``base_url``, or, without one, what ``openai`` has. The others
    are kept because an agent's ``args`` (``-c model_provider=...``, ``--profile``) may
    select one, and they are not seen here.
    Codex's own side traffic (its curated plugins from GitHub and ``chatgpt.com``, measured
    with a custom provider) is not model traffic: it fails soft and is left refused.
    """
    file, config = _codex_config(setup)
    found = (
        _codex_provider(name, config, file, setup.variables) for name in _codex_providers(config)
    )
    return tuple(dict.fromkeys(itertools.chain.from_iterable(found)))


def codex_variables(setup: AgentSetup) -> tuple[str, ...]:
    """The variables Codex reads for the providers :func:`codex_endpoints` allows: each
    defined provider's ``env_key`` (its API key) and the values of its ``env_http_headers``
    (a header's value from a variable). A name other than letters, digits and ``_`` is left
    out (the sandbox takes names as patterns). The built-in providers' keys are the preset's
    ``OPENAI_*``."""
    _, config = _codex_config(setup)
    found: list[object] = []
    for name in _codex_providers(config):
        provider = dig(config, "model_providers", name)
        if name in _CODEX_BUILT_IN or not isinstance(provider, Mapping):
            continue
        headers = provider.get("env_http_headers")
        found.append(provider.get("env_key"))
        found += list(headers.values()) if isinstance(headers, Mapping) else []
    return tuple(dict.fromkeys(n for n in found if isinstance(n, str) and is_variable_name(n)))


def _gemini_dotenv(setup: AgentSetup) -> Source | None:
    """The one ``.env`` file Gemini CLI reads: from the workspace up to ``/``, each folder's
    ``.gemini/.env`` then ``.env``, then ``~/.gemini/.env`` and ``~/.env``; the first that
    exists is the only one read (a trusted folder: ralph runs it headless)."""
    home = Path(setup.home)
    folders = () if setup.workspace is None else (setup.workspace, *setup.workspace.parents)
    candidates = (
        *(folder / name for folder in folders for name in (".gemini/.env", ".env")),
        home / ".gemini" / ".env",
        home / ".env",
    )
    for candidate in candidates:
        # os.path.exists, like Node's existsSync, is False for a path it may not look at
        if os.path.exists(candidate):
            return Source(where=str(candidate), values=read_dotenv(candidate) or {})
    return None


def _gemini_auth(setup: AgentSetup, variables: Variables) -> str | None:
    """The auth type: ``security.auth.selectedType`` in the workspace's or the user's
    ``settings.json`` (the workspace's wins), else what the variables select."""
    user = Path(SANDBOX_PRESETS["gemini"].folders[0].locate(setup.environ, setup.home))
    folders = ((setup.workspace / ".gemini",) if setup.workspace is not None else ()) + (user,)
    for folder in folders:
        chosen = dig(read_json(folder / "settings.json", comments=True), "security", "auth")
        selected = dig(chosen, "selectedType")
        if isinstance(selected, str) and selected:
            return selected
    for name, auth in (
        ("GOOGLE_GENAI_USE_GCA", "oauth-personal"),
        ("GOOGLE_GENAI_USE_VERTEXAI", "vertex-ai"),
    ):
        found = variables.value(name)
        if found is not None and found[0] == "true":
            return auth
    return None


def gemini_endpoints(setup: AgentSetup) -> tuple[Endpoint, ...]:
    """Gemini CLI's: with a Google login, ``CODE_ASSIST_ENDPOINT`` or
    ``cloudcode-pa.googleapis.com:443`` (and, for ``oauth-personal``, its token's
    ``oauth2.googleapis.com:443``); with Vertex AI, ``GOOGLE_VERTEX_BASE_URL`` or the host
    of ``GOOGLE_CLOUD_LOCATION``; else ``GOOGLE_GEMINI_BASE_URL`` or
    ``generativelanguage.googleapis.com:443``. Each variable from the agent's ``env``, the
    environment, then Gemini CLI's ``.env`` file."""
    dotenv = _gemini_dotenv(setup)
    variables = setup.variables.extended(under=() if dotenv is None else (dotenv,))
    auth = _gemini_auth(setup, variables)
    if auth in _GOOGLE_LOGINS:
        found = variables.endpoint(("CODE_ASSIST_ENDPOINT",))
        if found is not None or auth != "oauth-personal":
            # compute-default-credentials takes its token from the machine's metadata server
            return _one(found, (_CODE_ASSIST,))
        return _with_login("gemini", (_CODE_ASSIST,), variables)
    if auth == "vertex-ai":
        found = variables.endpoint(("GOOGLE_VERTEX_BASE_URL",))
        if found is not None:
            return (found,)
        location = variables.value("GOOGLE_CLOUD_LOCATION")
        if location is None or location[0] == "global":
            return (_VERTEX_GLOBAL,)
        if location[0] in _VERTEX_REGIONAL:
            return (_VERTEX_REGIONAL[location[0]],)
        if not re.fullmatch(r"[a-z0-9-]+", location[0]):
            raise SandboxError(f"{location[1]} is not a Google Cloud location: {location[0]!r}")
        return (Endpoint(f"{location[0]}-aiplatform.googleapis.com", 443),)
    defaults = SANDBOX_PRESETS["gemini"].base_url.defaults
    return _one(variables.endpoint(("GOOGLE_GEMINI_BASE_URL",)), defaults)
