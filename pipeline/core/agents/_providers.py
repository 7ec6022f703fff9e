"""Where the common model providers are served when nothing moves them, by the provider's own
name (pure data): the hosts the agent CLIs' modules declare their endpoints with."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final

from pipeline.core.sandbox import Endpoint

__all__ = ["HTTPS", "PROVIDER_HOSTS"]

HTTPS: Final = 443

PROVIDER_HOSTS: Final[Mapping[str, Endpoint]] = types.MappingProxyType(
    {
        "anthropic": Endpoint("api.anthropic.com", HTTPS),
        "openai": Endpoint("api.openai.com", HTTPS),
        "google": Endpoint("generativelanguage.googleapis.com", HTTPS),
        "openrouter": Endpoint("openrouter.ai", HTTPS),
        "groq": Endpoint("api.groq.com", HTTPS),
        "mistral": Endpoint("api.mistral.ai", HTTPS),
        "deepseek": Endpoint("api.deepseek.com", HTTPS),
        "xai": Endpoint("api.x.ai", HTTPS),
        # a local server, litellm's default for it
        "ollama": Endpoint("localhost", 11434),
    }
)
"""Each provider's host, by the provider's name."""
