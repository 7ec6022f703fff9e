"""Model endpoints as each agent CLI's module declares them: its defaults, the variables that
move it (the agent's ``env`` before the environment), the provider a model name means to a CLI
that routes by it, and a bad value named by its variable. Nothing reads a CLI's own files."""

from __future__ import annotations

import pytest

from pipeline.core.agents import PRESETS, PROVIDER_HOSTS
from pipeline.core.agents.aider import aider_provider
from pipeline.core.agents.opencode import opencode_provider
from pipeline.core.sandbox import Endpoint, SandboxError

SERVER = "http://127.0.0.1:8123/v1"
LOCAL = Endpoint("127.0.0.1", 8123)


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


def test_every_declared_host_is_public_https_or_loopback() -> None:
    """A CLI's defaults and its providers' hosts are served on HTTPS, or on a loopback port of
    their own (a local model server)."""
    for preset in PRESETS.values():
        hosts = (*preset.endpoints.defaults, *(p.host for p in preset.endpoints.providers.values()))
        for endpoint in hosts:
            assert endpoint.port == 443 or endpoint.is_loopback, (preset.name, endpoint)
    for name, endpoint in PROVIDER_HOSTS.items():
        assert endpoint.port == 443 or endpoint.is_loopback, name


def test_a_cli_reaches_its_defaults_unless_a_variable_moves_it() -> None:
    """Claude Code's API and login hosts by default; ``ANTHROPIC_BASE_URL`` instead of them,
    the agent's ``env`` before the environment; a blank value is unset."""
    claude = PRESETS["claude"].endpoints
    assert Endpoint("api.anthropic.com", 443) in claude.resolve(None, {}, {})
    assert claude.resolve(None, {}, {"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)
    moved = claude.resolve("m", {"ANTHROPIC_BASE_URL": SERVER}, {"ANTHROPIC_BASE_URL": "http://x"})
    assert moved == (LOCAL,)
    assert claude.resolve(None, {"ANTHROPIC_BASE_URL": " "}, {}) == claude.defaults


def test_a_variable_that_is_no_url_is_named() -> None:
    """A base-URL variable set to something that is no URL stops the run's start, naming the
    variable and where it was set."""
    gemini = PRESETS["gemini"].endpoints
    with pytest.raises(SandboxError, match=r"GOOGLE_GEMINI_BASE_URL in the agent's env"):
        gemini.resolve(None, {"GOOGLE_GEMINI_BASE_URL": "http://"}, {})


def test_a_cli_routing_by_model_reaches_that_provider_or_nothing() -> None:
    """OpenCode reaches the host of the model's provider (its variable moves it); a provider
    its own configuration defines is not known, so ``allow`` must name it."""
    opencode = PRESETS["opencode"].endpoints
    assert opencode.resolve("openai/gpt-5", {}, {}) == (Endpoint("api.openai.com", 443),)
    assert opencode.resolve("anthropic/x", {}, {"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)
    assert opencode.resolve("ralph/scripted", {}, {}) == ()
    assert opencode.resolve(None, {}, {}) == (Endpoint("opencode.ai", 443),)


def test_aider_follows_litellm_s_variables_for_the_model_s_provider() -> None:
    """aider's OpenAI model goes where ``OPENAI_API_BASE`` points (``OPENAI_BASE_URL`` first);
    an Anthropic one to Anthropic; a bare Vertex name nowhere known."""
    aider = PRESETS["aider"].endpoints
    assert aider.resolve("openai/scripted", {}, {"OPENAI_API_BASE": SERVER}) == (LOCAL,)
    both = {"OPENAI_API_BASE": "http://elsewhere:1", "OPENAI_BASE_URL": SERVER}
    assert aider.resolve("gpt-4o", {}, both) == (LOCAL,)
    assert aider.resolve("sonnet", {}, {}) == (Endpoint("api.anthropic.com", 443),)
    assert aider.resolve("flash", {}, {}) == (PROVIDER_HOSTS["google"],)
    assert aider.resolve("gemini-1.5-pro", {}, {}) == ()
