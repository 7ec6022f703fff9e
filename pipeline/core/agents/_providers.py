"""Where the common model providers are served when nothing moves them, by the provider's own
name (pure data): the hosts the agent CLIs' modules declare their endpoints with, and the
:class:`Provider` records of a CLI that routes by the model's name."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox import Endpoint

__all__ = ["HTTPS", "PROVIDER_HOSTS", "Provider", "providers"]

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


@final
@frozen(kw_only=True)
class Provider:
    """A model provider as a CLI names it in a model (``anthropic`` in ``anthropic/x``):
    where it is served, and the variables that move it there instead, first first."""

    host: Endpoint
    variables: tuple[str, ...] = ()


def providers(moved_by: Mapping[str, tuple[str, ...]], **more: Provider) -> Mapping[str, Provider]:
    """Every provider of :data:`PROVIDER_HOSTS`, moved by its variables in ``moved_by``, and
    ``more`` (a CLI's own, or its own name for one)."""
    hosts = {
        name: Provider(host=host, variables=moved_by.get(name, ()))
        for name, host in PROVIDER_HOSTS.items()
    }
    return types.MappingProxyType({**hosts, **more})
