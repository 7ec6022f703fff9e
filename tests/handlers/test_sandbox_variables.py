"""The variables an agent CLI's own configuration names for its model's key, which the sandbox
passes though no preset pattern covers them: Codex's provider ``env_key`` and
``env_http_headers`` (measured: Codex 0.169 in the sandbox without its ``env_key`` variable
stopped with "Missing environment variable"), OpenCode's ``{env:NAME}``. Only the providers
the agent may use name them, and a name that could be a pattern never passes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.core.config import parse_config
from pipeline.events import Instant
from pipeline.handlers.runtime import choose_sandbox
from pipeline.handlers.sandbox import derive_variables
from tests.real_agents.codex import API_KEY_VARIABLE, codex_environment
from tests.real_agents.test_opencode import opencode_env

SERVER = "http://127.0.0.1:18765"
PROGRAM = Path("/opt/agent/bin/agent")
"""Only its folder goes on PATH: no program runs here."""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def named(
    preset: str | None,
    home: Path,
    environ: Mapping[str, str] | None = None,
    model: str | None = None,
) -> tuple[str, ...]:
    return derive_variables(preset, {}, environ or {}, str(home), model)


def codex_config(home: Path, text: str) -> dict[str, str]:
    """``text`` as ``$CODEX_HOME/config.toml``; the environment naming that home."""
    (home / "codex").mkdir(exist_ok=True)
    (home / "codex" / "config.toml").write_text(text)
    return {"CODEX_HOME": str(home / "codex")}


def provider(name: str, key: str, headers: str = "") -> str:
    return (
        f'[model_providers.{name}]\nname = "{name}"\nbase_url = "{SERVER}/v1"\n'
        f'env_key = "{key}"\n{headers}\n'
    )


def test_the_codex_real_agent_setup_names_its_key_variable(home: Path, tmp_path: Path) -> None:
    """``codex_environment``'s provider reads its key from the variable ``env_key`` names."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    environ = codex_environment(home, codex_home, SERVER, PROGRAM)
    assert named("codex", home, environ, "scripted") == (API_KEY_VARIABLE,)


def test_codex_names_only_the_selected_providers_variables(home: Path) -> None:
    """The selected provider's ``env_key`` and ``env_http_headers`` values; another
    provider's key is not the agent's to read."""
    headers = '[model_providers.mine.env_http_headers]\n"X-Team" = "MINE_TEAM"\n'
    text = (
        'model_provider = "mine"\n'
        + provider("mine", "MINE_KEY", headers)
        + provider("spare", "SPARE_KEY")
    )
    assert named("codex", home, codex_config(home, text)) == ("MINE_KEY", "MINE_TEAM")


def test_codex_without_a_selection_names_every_defined_providers_key(home: Path) -> None:
    """As with the endpoints: an agent's ``args`` may select any defined provider."""
    text = provider("mine", "MINE_KEY") + provider("spare", "SPARE_KEY")
    assert named("codex", home, codex_config(home, text)) == ("MINE_KEY", "SPARE_KEY")


def test_codex_built_in_providers_name_nothing_beyond_the_preset(home: Path) -> None:
    """``openai`` reads ``OPENAI_API_KEY``, which the preset's ``OPENAI_*`` passes; a file
    that is missing or malformed names nothing."""
    assert named("codex", home, codex_config(home, 'model_provider = "openai"\n')) == ()
    assert named("codex", home, codex_config(home, "model_provider = [")) == ()
    assert named("codex", home) == ()


def test_a_name_that_could_be_a_pattern_never_passes(home: Path) -> None:
    """The sandbox matches names as shell patterns: an ``env_key`` of ``*`` would pass every
    variable of the person's environment."""
    text = 'model_provider = "mine"\n' + provider("mine", "*")
    assert named("codex", home, codex_config(home, text)) == ()
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"provider": {"mine": {"options": {"apiKey": "{env:A*}"}}}}))
    assert named("opencode", home, model="mine/m") == ()


def test_opencode_names_the_env_references_of_the_models_provider(home: Path) -> None:
    """``{env:NAME}`` anywhere in the model's provider table (a key, a header); another
    provider's references are left out."""
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    mine = {"options": {"apiKey": "{env:MINE_KEY}", "headers": {"X-Org": "{env:MINE_ORG}"}}}
    spare = {"options": {"apiKey": "{env:SPARE_KEY}"}}
    config.write_text(json.dumps({"provider": {"mine": mine, "spare": spare}}))
    assert named("opencode", home, model="mine/m") == ("MINE_KEY", "MINE_ORG")
    assert named("opencode", home) == ("MINE_KEY", "MINE_ORG", "SPARE_KEY")


def test_the_opencode_real_agent_setup_names_nothing(home: Path) -> None:
    """Its key is written in the file itself (``opencode_env``)."""
    environ = opencode_env(home, SERVER, PROGRAM)
    assert named("opencode", home, environ, "ralph/scripted") == ()


@pytest.mark.parametrize("preset", ["claude", "gemini", "aider", None])
def test_other_presets_and_commands_name_nothing(home: Path, preset: str | None) -> None:
    """Their keys are in variables their preset's patterns name (a command: ``pass_env``)."""
    assert named(preset, home, codex_config(home, provider("mine", "MINE_KEY"))) == ()


def test_the_run_passes_the_named_variables_and_withholds_them_no_more(
    tmp_path: Path, home: Path
) -> None:
    """The run's choice reads them when it starts: the agent's sandbox passes the key, and
    the ``SandboxChecked`` fact no longer names it withheld (a fake bwrap that works)."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    (bin_folder / "bwrap").write_text(
        '#!/bin/sh\n[ "$1" = --version ] && echo "bubblewrap 0.8.0"\nexit 0\n'
    )
    (bin_folder / "bwrap").chmod(0o755)
    environ = {
        **codex_config(home, 'model_provider = "mine"\n' + provider("mine", "MINE_KEY")),
        "HOME": str(home),
        "PATH": str(bin_folder),
        "MINE_KEY": "secret",
        "OTHER_KEY": "secret",
    }
    config = parse_config(
        '[agents.main]\npreset = "codex"\n[chains]\ndefault = ["main"]\n'
        '[sandbox]\nmode = "required"\n',
        "ralph.toml",
    )
    choice = choose_sandbox(config, tmp_path, environ)
    assert choice.variables == {"main": ("MINE_KEY",)}
    assert "MINE_KEY" in choice.needs("main", config.agents["main"]).pass_env
    (checked,) = choice.checked(config, environ, Instant(datetime(2026, 1, 1, tzinfo=UTC)))
    assert "OTHER_KEY" in checked.withheld
    assert "MINE_KEY" not in checked.withheld


def test_a_ladders_models_provider_is_named_too(home: Path, tmp_path: Path) -> None:
    """``[hats.developer] escalate`` may move the developer to another provider's model: its
    key is passed as the agent's own model's is (without it the escalated CLI has no key)."""
    from pipeline.handlers.runtime._sandboxing import model_variables

    config_file = home / ".config" / "opencode" / "opencode.json"
    config_file.parent.mkdir(parents=True)
    providers = {
        "mine": {"options": {"apiKey": "{env:MINE_KEY}"}},
        "spare": {"options": {"apiKey": "{env:SPARE_KEY}"}},
    }
    config_file.write_text(json.dumps({"provider": providers}))
    toml = '[agents.main]\npreset = "opencode"\nmodel = "mine/m"\n'
    own = parse_config(toml, "ralph.toml")
    laddered = parse_config(toml + '[hats.developer]\nescalate = ["spare/m"]\n', "ralph.toml")
    environ = {"HOME": str(home)}
    assert model_variables(own, tmp_path, environ) == {"main": ("MINE_KEY",)}
    assert model_variables(laddered, tmp_path, environ) == {"main": ("MINE_KEY", "SPARE_KEY")}
