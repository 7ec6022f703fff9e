"""Model providers by the ids OpenCode and aider give them: where each is served, the variables
that move it, and which provider a model name means (pure data and parsing).

OpenCode names a model ``provider/model`` (``anthropic/claude-sonnet-4-5``, ``ralph/scripted``)
and aider names it as litellm does (``openai/gpt-4o``, a bare ``gpt-4o``, an alias such as
``sonnet``). Every host below is one the CLI's own code uses as that provider's default (read
in the pinned OpenCode binary and in the litellm that aider 0.86.2 installs), always on 443.
Section 8 of ``docs/research/sandbox-design.md`` says how the handler uses them.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final

from pipeline.core.sandbox._endpoint import Endpoint

__all__ = [
    "LITELLM_BASE_URL_VARIABLES",
    "OPENCODE_BASE_URL_VARIABLES",
    "PROVIDER_ENDPOINTS",
    "aider_provider",
    "opencode_provider",
]

_HTTPS: Final = 443

PROVIDER_ENDPOINTS: Final[Mapping[str, Endpoint]] = types.MappingProxyType(
    {
        "anthropic": Endpoint("api.anthropic.com", _HTTPS),
        "openai": Endpoint("api.openai.com", _HTTPS),
        # OpenCode calls Google's Gemini API "google", litellm "gemini"
        "google": Endpoint("generativelanguage.googleapis.com", _HTTPS),
        "gemini": Endpoint("generativelanguage.googleapis.com", _HTTPS),
        "openrouter": Endpoint("openrouter.ai", _HTTPS),
        "groq": Endpoint("api.groq.com", _HTTPS),
        "mistral": Endpoint("api.mistral.ai", _HTTPS),
        "deepseek": Endpoint("api.deepseek.com", _HTTPS),
        "xai": Endpoint("api.x.ai", _HTTPS),
        # OpenCode's own gateway (Zen)
        "opencode": Endpoint("opencode.ai", _HTTPS),
        # a local server, litellm's default for it
        "ollama": Endpoint("localhost", 11434),
    }
)
"""Where each provider is served when nothing moves it, by provider id."""

LITELLM_BASE_URL_VARIABLES: Final[Mapping[str, tuple[str, ...]]] = types.MappingProxyType(
    {
        # litellm takes OPENAI_BASE_URL before OPENAI_API_BASE (aider's --openai-api-base)
        "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
        "gemini": ("GEMINI_API_BASE",),
        "openrouter": ("OPENROUTER_API_BASE",),
        "groq": ("GROQ_API_BASE",),
        "mistral": ("MISTRAL_API_BASE",),
        "deepseek": ("DEEPSEEK_API_BASE",),
        "xai": ("XAI_API_BASE",),
        "ollama": ("OLLAMA_API_BASE",),
    }
)
"""The variables litellm (aider's client) reads a provider's base URL from, first first."""

OPENCODE_BASE_URL_VARIABLES: Final[Mapping[str, str]] = types.MappingProxyType(
    # the AI SDK packages OpenCode bundles read these when the config sets no baseURL
    {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
)
"""The variable that moves a provider of OpenCode's when its configuration does not."""

_AIDER_ALIASES: Final[Mapping[str, str]] = types.MappingProxyType(
    {
        **dict.fromkeys(("sonnet", "haiku", "opus"), "anthropic"),
        **dict.fromkeys(("3", "4", "4o", "4-turbo", "35turbo", "35-turbo"), "openai"),
        **dict.fromkeys(("deepseek", "r1"), "deepseek"),
        **dict.fromkeys(
            ("flash", "flash-lite", "gemini", "gemini-exp", "gemini-2.5-pro"), "gemini"
        ),
        "gemini-3-pro-preview": "gemini",
        "grok3": "xai",
        **dict.fromkeys(("quasar", "optimus"), "openrouter"),
    }
)
"""aider's model aliases (``MODEL_ALIASES``) by the provider of the model each stands for."""

# Bare names litellm itself places (its price table's provider); a bare "gemini-..." is a
# Vertex AI model to litellm, whose host depends on a project and region: not guessed.
_BARE_MODELS: Final = (
    (re.compile(r"(gpt-|chatgpt-|ft:gpt-|o[134](-|$))"), "openai"),
    (re.compile(r"claude-"), "anthropic"),
    (re.compile(r"deepseek-"), "deepseek"),
)


def opencode_provider(model: str) -> str | None:
    """The provider id of an OpenCode model (``anthropic/claude-sonnet-4-5`` is
    ``anthropic``), or None for a name without one."""
    provider, slash, _ = model.partition("/")
    return provider if slash and provider else None


def aider_provider(model: str) -> str | None:
    """The litellm provider aider sends ``model`` to: the prefix before the first ``/``
    (``openrouter/anthropic/claude-sonnet-4`` is ``openrouter``), an alias's provider, the
    provider of a bare OpenAI, Anthropic or DeepSeek model name, else None (unknown)."""
    name = model.strip().lower()
    provider, slash, _ = name.partition("/")
    if slash:
        return provider or None
    if name in _AIDER_ALIASES:
        return _AIDER_ALIASES[name]
    for pattern, owner in _BARE_MODELS:
        if pattern.match(name):
            return owner
    return None
