"""aider, declared (pure): without git (it would refuse to write ralph's ignored reports),
whole-file edits, no history files, update checks or analytics; it cannot run commands, so it
cannot publish. The reasons for every flag are in ``docs/architecture/agents/aider.md``.

It names models as litellm does (``openai/gpt-4o``, a bare ``gpt-4o``, an alias such as
``sonnet``): the sandbox lets it reach that provider's host, or where litellm's variable
for it points (``OPENAI_BASE_URL``, ``OPENAI_API_BASE``, ...). Its output is plain text:
a limit is told by its last words only.

Usage: Usage from aider's text output (pure).

After each model request aider prints a line such as::

    Tokens: 1.5k sent, 300 cache hit, 80 received. Cost: $0.0038 message, $0.0038 session.

``sent`` counts every prompt token, those read from the cache (``cache hit``) or written to
it (``cache write``) included, so those are subtracted to give the input tokens. Counts of
1,000 or more are rounded by aider (``1.5k``, ``15k``): the figures are as exact as it prints
them. The ``Cost:`` part appears only when aider knows the model's prices; the last
``session`` cost is the invocation's (one aider process is one session). Without it the cost
is not reported. ``Model: NAME with ... edit format`` (or ``Main model:``) names the model;
each ``Tokens:`` line is one turn.
"""

from __future__ import annotations

import re
import types
from collections.abc import Iterable, Mapping
from typing import Final

from pipeline.core.agents._preset import (
    AgentPreset,
    ModelEndpoints,
    OutputFormat,
    Pitfall,
    PromptVia,
    Situation,
)
from pipeline.core.agents._providers import PROVIDER_HOSTS, Provider, providers
from pipeline.core.agents._usage import UsageFigures
from pipeline.core.sandbox import ConfigFolder, SandboxPreset

__all__ = ["PRESET", "aider_provider", "parse_aider"]

_ANSI: Final = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_COUNT: Final = r"(\d+(?:\.\d+)?k?)"
_TOKENS: Final = re.compile(
    rf"Tokens: {_COUNT} sent(?:, {_COUNT} cache write)?(?:, {_COUNT} cache hit)?"
    rf", {_COUNT} received\."
)
_COST: Final = re.compile(r"Cost: \$(\d+(?:\.\d+)?) message, \$(\d+(?:\.\d+)?) session\.")
_MODEL: Final = re.compile(r"^(?:Main model|Model): (\S+) with ")


def _tokens(text: str | None) -> int:
    if not text:
        return 0
    if text.endswith("k"):
        return round(float(text[:-1]) * 1000)
    return int(text)


def parse_aider(lines: Iterable[bytes]) -> UsageFigures:
    """The usage aider's output reports (every field None when it says nothing)."""
    turns = 0
    sent = received = cache_write = cache_hit = 0
    session_cost: float | None = None
    model: str | None = None
    for raw in lines:
        line = _ANSI.sub("", raw.decode("utf-8", "replace")).strip()
        if model is None and (named := _MODEL.match(line)):
            model = named[1].rstrip(",")
        counted = _TOKENS.search(line)
        if counted:
            turns += 1
            sent += _tokens(counted[1])
            cache_write += _tokens(counted[2])
            cache_hit += _tokens(counted[3])
            received += _tokens(counted[4])
        costed = _COST.search(line)
        if costed:
            session_cost = float(costed[2])
    if not turns:
        return UsageFigures(model=model, cost_usd=session_cost)
    return UsageFigures(
        model=model,
        input_tokens=max(0, sent - cache_hit - cache_write),
        output_tokens=received,
        cache_read_tokens=cache_hit,
        cache_write_tokens=cache_write,
        turns=turns,
        cost_usd=session_cost,
    )


_ALIASES: Final[Mapping[str, str]] = types.MappingProxyType(
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


def aider_provider(model: str) -> str | None:
    """The litellm provider aider sends ``model`` to: the prefix before the first ``/``
    (``openrouter/anthropic/sonnet-4`` is ``openrouter``), an alias's provider, the
    provider of a bare OpenAI, Anthropic or DeepSeek model name, else None (unknown)."""
    name = model.strip().lower()
    provider, slash, _ = name.partition("/")
    if slash:
        return provider or None
    if name in _ALIASES:
        return _ALIASES[name]
    for pattern, owner in _BARE_MODELS:
        if pattern.match(name):
            return owner
    return None


_LITELLM_VARIABLES: Final[Mapping[str, tuple[str, ...]]] = {
    # litellm takes OPENAI_BASE_URL before OPENAI_API_BASE (aider's --openai-api-base, which
    # aider copies from AIDER_OPENAI_API_BASE)
    "openai": ("OPENAI_BASE_URL", "AIDER_OPENAI_API_BASE", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    "google": ("GEMINI_API_BASE",),
    "openrouter": ("OPENROUTER_API_BASE",),
    "groq": ("GROQ_API_BASE",),
    "mistral": ("MISTRAL_API_BASE",),
    "deepseek": ("DEEPSEEK_API_BASE",),
    "xai": ("XAI_API_BASE",),
    "ollama": ("OLLAMA_API_BASE",),
}
"""The variables litellm reads a provider's base URL from, first first."""

_PROVIDERS: Final = providers(
    _LITELLM_VARIABLES,
    # litellm calls Google's Gemini API "gemini"
    gemini=Provider(host=PROVIDER_HOSTS["google"], variables=("GEMINI_API_BASE",)),
)


def _cannot_publish(situation: Situation) -> tuple[str, str] | None:
    return (
        "aider cannot run shell commands under --yes-always: it never publishes a "
        "topic, so hats' required events never arrive from it",
        f"give roles that must publish topics another agent than {situation.name}",
    )


PRESET: Final = AgentPreset(
    name="aider",
    argv=(
        "aider",
        "--no-git",
        "--edit-format",
        "whole",
        "--yes-always",
        "--no-stream",
        "--no-pretty",
        "--no-fancy-input",
        "--chat-history-file",
        "/dev/null",
        "--input-history-file",
        "/dev/null",
        "--no-check-update",
        "--no-show-release-notes",
        "--no-show-model-warnings",
        "--no-analytics",
        "--no-detect-urls",
        "--no-suggest-shell-commands",
        "--message-file",
        "{prompt_file}",
    ),
    prompt_via=PromptVia.FILE,
    output=OutputFormat(name="aider", usage=parse_aider),
    sandbox=SandboxPreset(
        folders=(ConfigFolder(default=".aider"),),
        read_only_files=(
            ".aider.conf.yml",
            ".aider.model.settings.yml",
            ".aider.model.metadata.json",
        ),
        pass_env=("AIDER_*", "OPENAI_*", "ANTHROPIC_*", "GEMINI_*"),
    ),
    endpoints=ModelEndpoints(
        variables=_LITELLM_VARIABLES["openai"],
        defaults=(PROVIDER_HOSTS["openai"],),
        providers=_PROVIDERS,
        provider_of=aider_provider,
    ),
    install="install aider: python -m pip install aider-chat",
    pitfalls=(Pitfall(found=_cannot_publish, fails=False),),
    droppings=(".aider*",),
    mcp=None,  # 0.86.2 has no MCP client: its source names no "mcp" anywhere
)
"""aider."""
