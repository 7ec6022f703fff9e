"""ralph-orchestrator backends become ``[agents.NAME]`` tables and chains that mean the same;
a backend ralph has no preset for is named, and no chain names an agent left unconfigured."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import yaml

from pipeline.core.config import PRESETS, translate_orchestrator_config


def _toml(doc: dict[str, Any]) -> dict[str, Any]:
    text = yaml.safe_dump(doc, sort_keys=False)
    return tomllib.loads(translate_orchestrator_config(text, "ralph.yml").toml_text)


def _hat(**settings: Any) -> dict[str, Any]:
    return {"hats": {"h": {"triggers": ["a"], "publishes": ["b"], **settings}}}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_backend_ralph_has_a_preset_for_becomes_that_preset(name: str) -> None:
    """``cli.backend: NAME`` configures the preset and makes it the default chain."""
    data = _toml({"cli": {"backend": name}})
    assert data["agents"] == {name: {"preset": name}}
    assert data["chains"] == {"default": [name]}


def test_no_backend_is_ralph_orchestrators_default_claude() -> None:
    """ralph-orchestrator runs claude when no backend is named; so does the translation."""
    translation = translate_orchestrator_config("hats: {}", "ralph.yml")
    assert tomllib.loads(translation.toml_text)["chains"] == {"default": ["claude"]}
    assert "# It names no backend: ralph-orchestrator's default, claude, is used." in (
        translation.toml_text
    )


def test_the_v1_agent_key_wins_over_cli_backend() -> None:
    """As in ralph-orchestrator, the top-level ``agent`` overrides ``cli.backend``."""
    translation = translate_orchestrator_config("agent: codex\ncli: {backend: gemini}", "ralph.yml")
    assert tomllib.loads(translation.toml_text)["chains"] == {"default": ["codex"]}
    assert translation.untranslated == ("cli.backend: overridden by the top-level agent 'codex'",)


def test_cli_args_go_to_the_default_agent_only() -> None:
    """``cli.args`` extend the default backend; a hat naming the same backend runs it without
    them, as ralph-orchestrator does, so it gets an agent of its own."""
    data = _toml({"cli": {"backend": "claude", "args": ["--x"]}, **_hat(backend="claude")})
    assert data["agents"] == {
        "claude": {"preset": "claude", "args": ["--x"]},
        "claude-h": {"preset": "claude"},
    }
    assert data["hats"]["h"]["chain"] == ["claude-h"]


def test_a_custom_cli_backend_becomes_a_command() -> None:
    """The program, its arguments, then the prompt flag; the prompt is the last argument."""
    cli = {"backend": "custom", "command": "./agent", "args": ["-q"], "prompt_flag": "--ask"}
    data = _toml({"cli": cli})
    assert data["agents"] == {
        "custom": {"command": ["./agent", "-q", "--ask"], "prompt_via": "argument"}
    }
    assert data["chains"] == {"default": ["custom"]}


def test_a_custom_cli_backend_reading_stdin_gets_its_prompt_on_stdin() -> None:
    """``prompt_mode: stdin`` is ralph's ``prompt_via = "stdin"``; no prompt flag is added."""
    cli = {"backend": "custom", "command": "./agent", "prompt_mode": "stdin", "prompt_flag": "-p"}
    assert _toml({"cli": cli})["agents"]["custom"] == {
        "command": ["./agent"],
        "prompt_via": "stdin",
    }


def test_a_custom_backend_without_a_program_leaves_the_default_chain_empty() -> None:
    """No chain names an agent that is not configured."""
    translation = translate_orchestrator_config("cli: {backend: custom}", "ralph.yml")
    data = tomllib.loads(translation.toml_text)
    assert "chains" not in data
    assert "agents" not in data
    assert translation.untranslated == (
        "cli.backend: custom needs cli.command; the default chain is left empty",
    )


def test_a_hat_command_backend_is_an_agent_named_after_its_program() -> None:
    """``{command, args}`` is an argv list; the hat's chain names it."""
    data = _toml(_hat(backend={"command": "/opt/bin/my-agent", "args": ["--fast"]}))
    assert data["agents"]["my-agent"] == {
        "command": ["/opt/bin/my-agent", "--fast"],
        "prompt_via": "argument",
    }
    assert data["hats"]["h"]["chain"] == ["my-agent"]


def test_two_hats_with_the_same_program_share_its_agent() -> None:
    """The same table is configured once."""
    backend = {"command": "./agent"}
    doc = {"hats": {h: {"triggers": [h], "backend": backend} for h in ("a", "b")}}
    data = _toml(doc)
    assert list(data["agents"]) == ["claude", "agent"]
    assert data["hats"]["a"]["chain"] == data["hats"]["b"]["chain"] == ["agent"]


def test_a_typed_backend_maps_its_type_to_a_preset_and_its_args_to_the_hat() -> None:
    """``{type: codex, args}`` runs the codex preset with the hat's arguments after
    ``backend_args``'s (ralph-orchestrator adds those last)."""
    data = _toml(_hat(backend={"type": "codex", "args": ["-m", "o4"]}, backend_args=["-q"]))
    assert data["agents"]["codex"] == {"preset": "codex"}
    assert data["hats"]["h"]["chain"] == ["codex"]
    assert data["hats"]["h"]["args"] == ["-m", "o4", "-q"]


def test_the_args_alias_of_backend_args_is_read() -> None:
    """``args`` is ralph-orchestrator's short name for ``backend_args``."""
    assert _toml(_hat(args=["--x"]))["hats"]["h"]["args"] == ["--x"]


def test_a_typed_backend_whose_agent_is_a_preset_runs_that_preset() -> None:
    """``{type: X, agent: claude}``: the agent is a preset; the type is named as not kept."""
    text = yaml.safe_dump(_hat(backend={"type": "kiro-acp", "agent": "claude"}))
    translation = translate_orchestrator_config(text, "ralph.yml")
    assert tomllib.loads(translation.toml_text)["hats"]["h"]["chain"] == ["claude"]
    assert translation.untranslated[0].startswith("hats.h.backend.type: 'kiro-acp'")


@pytest.mark.parametrize(
    "backend", ["kiro", "amp", "copilot", "pi", {"type": "kiro", "agent": "x"}]
)
def test_a_hat_backend_with_no_preset_is_named_and_left_out_of_every_chain(
    backend: object,
) -> None:
    """The hat keeps running the default chain; no agent table or chain names the backend."""
    text = yaml.safe_dump(_hat(backend=backend))
    translation = translate_orchestrator_config(text, "ralph.yml")
    data = tomllib.loads(translation.toml_text)
    assert "chain" not in data["hats"]["h"]
    assert list(data["agents"]) == ["claude"]
    assert "configure [agents." in translation.untranslated[0]
    assert "until then the hat runs the default chain" in translation.untranslated[0]


def test_a_hat_left_out_configures_no_agent() -> None:
    """A hat with no trigger is left out, and so is the agent only it named."""
    data = _toml({"hats": {"h": {"backend": "codex"}}})
    assert list(data["agents"]) == ["claude"]
    assert list(data["hats"]) == ["coordinator"]
