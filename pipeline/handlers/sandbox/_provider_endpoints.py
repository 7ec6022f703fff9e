"""The model endpoints of OpenCode and aider, which reach whichever provider the model names
(I/O: reads their configuration and ``.env`` files).

Both orders were measured with the pinned CLIs against scripted model servers or read in
their source (aider's ``main.py``, the litellm it installs):

- OpenCode (1.18.33) merges its global ``config.json``, ``opencode.json`` and
  ``opencode.jsonc``, then ``$OPENCODE_CONFIG``, ``~/.opencode``, ``$OPENCODE_CONFIG_DIR`` and
  ``$OPENCODE_CONFIG_CONTENT``, a later one winning. A provider or model set in the
  workspace's ``opencode.json`` or ``.opencode/`` took no effect, so those are not read.
- aider (0.86.2) loads ``~/.aider/oauth-keys.env``, ``~/.env`` and the workspace's ``.env``
  over its environment (``override=True``); litellm then reads the provider's variables.
  ``.aider.conf.yml`` is not read: a base URL set there is missed (``allow`` adds it).

OpenCode also fills ``{env:NAME}`` in its configuration (a provider's ``apiKey``):
:func:`opencode_variables` names those of the model's provider, so the sandbox passes them.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from pipeline.core.sandbox import (
    LITELLM_BASE_URL_VARIABLES,
    OPENCODE_BASE_URL_VARIABLES,
    PROVIDER_ENDPOINTS,
    SANDBOX_PRESETS,
    Endpoint,
    aider_provider,
    opencode_provider,
)
from pipeline.handlers.sandbox._cli_config import (
    AgentSetup,
    Source,
    Variables,
    dig,
    endpoint_in,
    is_variable_name,
    read_dotenv,
    read_json,
)

__all__ = ["aider_endpoints", "opencode_endpoints", "opencode_variables"]

_ENV_REFERENCE: Final = re.compile(r"\{env:([^}]+)\}")

_AIDER_DEFAULTS: Final = (
    ("OPENROUTER_API_KEY", "openrouter"),
    ("ANTHROPIC_API_KEY", "anthropic"),
    ("DEEPSEEK_API_KEY", "deepseek"),
    ("OPENAI_API_KEY", "openai"),
    ("GEMINI_API_KEY", "gemini"),
)
"""The provider of the model aider picks without one, by the first API key it finds (the
keys' values are only tested for being set)."""


def _default(provider: str) -> tuple[Endpoint, ...]:
    known = PROVIDER_ENDPOINTS.get(provider)
    return () if known is None else (known,)


def _opencode_files(setup: AgentSetup) -> list[Path]:
    """OpenCode's configuration files, the losing one first."""
    environ = setup.environ
    folder = Path(SANDBOX_PRESETS["opencode"].folders[0].locate(environ, setup.home))
    files = [folder / name for name in ("config.json", "opencode.json", "opencode.jsonc")]
    custom = Path(environ.get("OPENCODE_CONFIG", ""))
    if custom != Path() and not custom.is_absolute() and setup.workspace is not None:
        custom = setup.workspace / custom  # opencode runs in the workspace
    if custom.is_absolute():
        files.append(custom)
    folders = [Path(setup.home) / ".opencode"]
    if environ.get("OPENCODE_CONFIG_DIR"):
        folders.append(Path(environ["OPENCODE_CONFIG_DIR"]))
    files += [each / name for each in folders for name in ("opencode.json", "opencode.jsonc")]
    return files


def _opencode_layers(setup: AgentSetup) -> list[tuple[str, object]]:
    """Each configuration OpenCode merges, named for messages, the losing one first."""
    layers: list[tuple[str, object]] = [
        (str(file), read_json(file, comments=True)) for file in _opencode_files(setup)
    ]
    content = setup.variables.value("OPENCODE_CONFIG_CONTENT")
    if content is not None:
        # malformed: opencode reports it, and there is nothing to allow from it
        with contextlib.suppress(json.JSONDecodeError):
            layers.append((content[1], json.loads(content[0])))
    return layers


def _opencode_providers(
    setup: AgentSetup, layers: Sequence[tuple[str, object]], defined: Sequence[str]
) -> Sequence[str]:
    """The providers an agent may use: the model's (``provider/model``: the model ralph
    passes, else the configuration's ``model``), or, with neither, every one ``defined``."""
    model: object = None
    for _, config in layers:
        model = dig(config, "model") or model
    chosen = setup.model or (model if isinstance(model, str) else None)
    provider = None if chosen is None else opencode_provider(chosen)
    return list(defined) if provider is None else [provider]


def _opencode_tables(layers: Sequence[tuple[str, object]]) -> list[tuple[str, str, object]]:
    """Each provider table of each layer: where it is, the provider's name, the table."""
    return [
        (where, name, provider)
        for where, config in layers
        if isinstance(providers := dig(config, "provider"), Mapping)
        for name, provider in providers.items()
    ]


def opencode_endpoints(setup: AgentSetup) -> tuple[Endpoint, ...]:
    """OpenCode's: for the model's provider (``provider/model``: the model ralph passes, else
    the configuration's ``model``; with neither, every provider the configuration defines),
    its ``options.baseURL`` (``{env:NAME}`` filled in), else the variable its SDK reads
    (``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``), else the provider's known host. A provider
    with none of them (unknown, not configured) gives nothing."""
    layers = _opencode_layers(setup)
    base_urls: dict[str, tuple[object, str]] = {}
    for where, name, provider in _opencode_tables(layers):
        value = dig(provider, "options", "baseURL")
        if value is not None or name not in base_urls:
            base_urls[name] = (value, f"{where}: provider.{name}.options.baseURL")
    environ = setup.environ
    found: list[Endpoint] = []
    for name in _opencode_providers(setup, layers, list(base_urls)):
        value, where = base_urls.get(name, (None, ""))
        if isinstance(value, str):
            value = _ENV_REFERENCE.sub(lambda ref: environ.get(ref[1], ""), value)
        variable = OPENCODE_BASE_URL_VARIABLES.get(name)
        endpoint = endpoint_in(value, where) or (
            None if variable is None else setup.variables.endpoint((variable,))
        )
        found += [endpoint] if endpoint is not None else _default(name)
    return tuple(dict.fromkeys(found))


def _references(value: object) -> list[str]:
    """The variables ``{env:NAME}`` names in the strings of the JSON ``value``."""
    if isinstance(value, str):
        return _ENV_REFERENCE.findall(value)
    if isinstance(value, Mapping):
        return [name for item in value.values() for name in _references(item)]
    if isinstance(value, list):
        return [name for item in value for name in _references(item)]
    return []


def opencode_variables(setup: AgentSetup) -> tuple[str, ...]:
    """The variables OpenCode fills in (``{env:NAME}``) in the provider tables of the
    providers :func:`opencode_endpoints` allows: an ``apiKey``, a header, a base URL. A name
    other than letters, digits and ``_`` is left out (the sandbox takes names as patterns)."""
    layers = _opencode_layers(setup)
    tables = _opencode_tables(layers)
    names = _opencode_providers(setup, layers, list(dict.fromkeys(n for _, n, _ in tables)))
    found = (ref for _, name, table in tables if name in names for ref in _references(table))
    return tuple(dict.fromkeys(n for n in found if is_variable_name(n)))


def _aider_dotenvs(setup: AgentSetup) -> list[Source]:
    """aider's ``.env`` files, the winning one first (each overrides the environment)."""
    home = Path(setup.home)
    files = [home / ".aider" / "oauth-keys.env", home / ".env"]
    if setup.workspace is not None:
        files.append(setup.workspace / ".env")
    read = ((file, read_dotenv(file)) for file in reversed(files))
    return [Source(where=str(file), values=values) for file, values in read if values is not None]


def aider_endpoints(setup: AgentSetup) -> tuple[Endpoint, ...]:
    """aider's: for the model's provider (the model ralph passes, else ``AIDER_MODEL``, else
    the one aider picks by the API keys set), litellm's base-URL variables for it
    (``OPENAI_BASE_URL``, then aider's ``AIDER_OPENAI_API_BASE``, then ``OPENAI_API_BASE``
    for OpenAI), else the provider's known host; nothing for a provider not known."""
    variables: Variables = setup.variables.extended(over=_aider_dotenvs(setup))
    named = variables.value("AIDER_MODEL")
    model = setup.model or (None if named is None else named[0])
    if model is not None:
        provider = aider_provider(model)
    else:
        picked = (owner for key, owner in _AIDER_DEFAULTS if variables.value(key) is not None)
        provider = next(picked, None)
    if provider is None:
        return ()
    names = LITELLM_BASE_URL_VARIABLES.get(provider, ())
    if provider == "openai":
        # aider copies --openai-api-base (AIDER_OPENAI_API_BASE) over OPENAI_API_BASE
        names = ("OPENAI_BASE_URL", "AIDER_OPENAI_API_BASE", "OPENAI_API_BASE")
    found = variables.endpoint(names)
    return (found,) if found is not None else _default(provider)
