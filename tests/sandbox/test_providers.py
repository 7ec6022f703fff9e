"""Model providers: which provider a model name means to OpenCode and to aider, and that every
provider with base-URL variables has a known host."""

from __future__ import annotations

import pytest

from pipeline.core.sandbox import (
    LITELLM_BASE_URL_VARIABLES,
    OPENCODE_BASE_URL_VARIABLES,
    PROVIDER_ENDPOINTS,
    aider_provider,
    opencode_provider,
)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("openai/scripted", "openai"),
        ("openrouter/anthropic/claude-sonnet-4", "openrouter"),
        ("Anthropic/claude-sonnet-4-5", "anthropic"),
        ("gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("o1", "openai"),
        ("chatgpt-4o-latest", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("deepseek-reasoner", "deepseek"),
        ("sonnet", "anthropic"),
        ("opus", "anthropic"),
        ("4o", "openai"),
        ("r1", "deepseek"),
        ("flash", "gemini"),
        ("gemini-2.5-pro", "gemini"),
        ("grok3", "xai"),
        ("optimus", "openrouter"),
        ("ollama/llama3", "ollama"),
    ],
)
def test_aider_models_name_their_litellm_provider(model: str, provider: str) -> None:
    """A ``provider/`` prefix wins; otherwise aider's aliases and the bare names litellm
    places itself."""
    assert aider_provider(model) == provider


@pytest.mark.parametrize("model", ["gemini-1.5-pro", "grok-4", "mistral-large-latest", "", "/x"])
def test_aider_models_litellm_cannot_place_have_no_provider(model: str) -> None:
    """A bare Gemini name is a Vertex AI model to litellm (its host needs a project and a
    region), and litellm itself places no bare Grok or Mistral name: none is guessed."""
    assert aider_provider(model) is None


def test_opencode_models_are_provider_slash_model() -> None:
    """The provider is what comes before the first slash; a name without one has none."""
    assert opencode_provider("ralph/scripted") == "ralph"
    assert opencode_provider("openrouter/anthropic/claude") == "openrouter"
    assert opencode_provider("scripted") is None
    assert opencode_provider("/scripted") is None


def test_every_provider_with_variables_has_a_known_host() -> None:
    """A provider whose base URL a variable moves is served somewhere when it is unset; the
    public providers on HTTPS, the local one on its own port."""
    assert set(LITELLM_BASE_URL_VARIABLES) <= set(PROVIDER_ENDPOINTS)
    assert set(OPENCODE_BASE_URL_VARIABLES) <= set(PROVIDER_ENDPOINTS)
    for name, endpoint in PROVIDER_ENDPOINTS.items():
        assert endpoint.port == 443 or endpoint.is_loopback, name
