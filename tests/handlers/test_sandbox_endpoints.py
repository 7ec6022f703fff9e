"""An agent's model endpoints, derived where its CLI reads its base URL: each real-agent test's
way of pointing its CLI at the scripted model server, each CLI's own order of precedence (as
measured with the pinned CLIs), the defaults, malformed files and values that are no URL."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from pathlib import Path

import pytest

from pipeline.core.sandbox import Endpoint, SandboxError
from pipeline.handlers.sandbox import derive_endpoints
from tests.model_server import ModelReply, ModelServer
from tests.real_agents.codex import codex_environment
from tests.real_agents.test_aider import MODEL as AIDER_MODEL
from tests.real_agents.test_aider import aider_env
from tests.real_agents.test_claude import claude_environment
from tests.real_agents.test_gemini import MODEL as GEMINI_MODEL
from tests.real_agents.test_gemini import gemini_env
from tests.real_agents.test_opencode import MODEL as OPENCODE_MODEL
from tests.real_agents.test_opencode import opencode_env

PORT = 18765
SERVER = f"http://127.0.0.1:{PORT}"
LOCAL = Endpoint("127.0.0.1", PORT)
OTHER = Endpoint("10.0.0.9", 8080)
THIRD = Endpoint("10.0.0.7", 9000)
PROGRAM = Path("/opt/agent/bin/agent")
"""Only its folder goes on PATH: no program runs here."""

ANTHROPIC = (Endpoint("api.anthropic.com", 443),)
CLAUDE_LOGIN = Endpoint("platform.claude.com", 443)
CODEX_LOGIN = Endpoint("auth.openai.com", 443)
GEMINI_LOGIN = Endpoint("oauth2.googleapis.com", 443)
"""Where each CLI refreshes a subscription login's token (read in the pinned CLIs)."""
CLAUDE_DEFAULTS = (*ANTHROPIC, CLAUDE_LOGIN)
OPENAI_HOSTS = (Endpoint("api.openai.com", 443), Endpoint("chatgpt.com", 443))
CODEX_DEFAULTS = (*OPENAI_HOSTS, CODEX_LOGIN)
CODE_ASSIST = Endpoint("cloudcode-pa.googleapis.com", 443)


def url(endpoint: Endpoint) -> str:
    return f"http://{endpoint}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "work" / "repo"
    folder.mkdir(parents=True)
    return folder


def derive(
    preset: str | None,
    home: Path,
    *,
    agent_env: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    model: str | None = None,
    workspace: Path | None = None,
) -> tuple[Endpoint, ...]:
    return derive_endpoints(
        preset, agent_env or {}, environ or {}, str(home), model, workspace=workspace
    )


# Each real-agent test's setup, built by that test's own helper.


def test_the_claude_real_agent_setup_derives_the_model_server(home: Path) -> None:
    """``ANTHROPIC_BASE_URL`` in the environment ralph runs with (``claude_environment``)."""
    environ = claude_environment(SERVER, home, PROGRAM)
    assert derive("claude", home, environ=environ) == (LOCAL,)


def test_the_codex_real_agent_setup_derives_the_model_server(home: Path, tmp_path: Path) -> None:
    """The ``scripted`` provider that ``$CODEX_HOME/config.toml`` selects, its ``base_url``
    the server's ``/v1`` (``codex_environment``)."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    environ = codex_environment(home, codex_home, SERVER, PROGRAM)
    assert derive("codex", home, environ=environ, model="scripted") == (LOCAL,)


def test_the_gemini_real_agent_setup_derives_the_model_server(home: Path) -> None:
    """``GOOGLE_GEMINI_BASE_URL`` in the agent's ``env`` (``gemini_env`` through
    ``agent_toml``), with the API key's auth selected in ``~/.gemini/settings.json``."""

    def script(request: object) -> ModelReply:
        return ModelReply(text="Done.")

    with ModelServer(script) as server:
        agent_env = gemini_env(home, server)
        found = derive("gemini", home, agent_env=agent_env, model=GEMINI_MODEL)
    assert found == (Endpoint("127.0.0.1", server.port),)


def test_the_opencode_real_agent_setup_derives_the_model_server(home: Path) -> None:
    """The ``ralph`` provider's ``options.baseURL`` in ``$XDG_CONFIG_HOME/opencode/
    opencode.json`` (``opencode_env``), for the model ralph passes or the file's own."""
    environ = opencode_env(home, SERVER, PROGRAM)
    model = f"ralph/{OPENCODE_MODEL}"
    assert derive("opencode", home, environ=environ, model=model) == (LOCAL,)
    assert derive("opencode", home, environ=environ) == (LOCAL,)


def test_the_aider_real_agent_setup_derives_the_model_server(home: Path) -> None:
    """``OPENAI_API_BASE`` for the model ``openai/scripted`` (``aider_env``)."""
    environ = aider_env(home, SERVER, PROGRAM)
    assert derive("aider", home, environ=environ, model=AIDER_MODEL) == (LOCAL,)


# Defaults and command agents.


def test_a_command_agent_has_no_model_endpoint(home: Path) -> None:
    """Nothing is derived for a command: the person names its endpoints in ``allow``."""
    environ = {"ANTHROPIC_BASE_URL": SERVER, "OPENAI_BASE_URL": SERVER}
    assert derive(None, home, environ=environ) == ()


@pytest.mark.parametrize(
    ("preset", "model", "expected"),
    [
        ("claude", None, CLAUDE_DEFAULTS),
        ("codex", None, CODEX_DEFAULTS),
        ("gemini", None, (Endpoint("generativelanguage.googleapis.com", 443),)),
        ("opencode", "anthropic/claude-sonnet-4-5", ANTHROPIC),
        ("opencode", "openrouter/x/y", (Endpoint("openrouter.ai", 443),)),
        ("aider", "sonnet", ANTHROPIC),
        ("aider", "gpt-4o", (Endpoint("api.openai.com", 443),)),
        ("aider", "deepseek/deepseek-chat", (Endpoint("api.deepseek.com", 443),)),
    ],
)
def test_with_nothing_configured_each_preset_reaches_its_provider(
    home: Path, preset: str, model: str | None, expected: tuple[Endpoint, ...]
) -> None:
    """No variable and no file: the CLI's own default host for the provider (and, for the
    CLIs with a subscription login, where it refreshes the login's token; OpenCode and
    aider use API keys here)."""
    assert derive(preset, home, model=model) == expected


def test_an_unknown_preset_is_a_bug(home: Path) -> None:
    """Presets are validated with the configuration; a name without a derivation raises."""
    with pytest.raises(ValueError, match="nosuch"):
        derive("nosuch", home)


# Claude Code: its settings files' env over its environment.


def test_claude_agent_env_beats_the_environment(home: Path) -> None:
    """ralph sets the agent's ``env`` over the environment it passes on."""
    found = derive(
        "claude",
        home,
        agent_env={"ANTHROPIC_BASE_URL": url(OTHER)},
        environ={"ANTHROPIC_BASE_URL": SERVER},
    )
    assert found == (OTHER,)


def test_claude_settings_env_beats_the_environment(home: Path) -> None:
    """Claude Code applies ``env`` from ``settings.json`` over its environment (measured
    with 2.1.328: the settings' server got the request)."""
    write(home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": SERVER}}))
    found = derive("claude", home, agent_env={"ANTHROPIC_BASE_URL": url(OTHER)})
    assert found == (LOCAL,)


def test_claude_settings_follow_claude_config_dir(home: Path, tmp_path: Path) -> None:
    """``$CLAUDE_CONFIG_DIR`` (from the agent's ``env`` too) moves the user's settings."""
    config = tmp_path / "claude-config"
    write(config / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": SERVER}}))
    write(
        home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": url(OTHER)}})
    )
    assert derive("claude", home, agent_env={"CLAUDE_CONFIG_DIR": str(config)}) == (LOCAL,)


def test_claude_local_then_project_then_user_settings(home: Path, workspace: Path) -> None:
    """The workspace's ``settings.local.json`` beats its ``settings.json``, which beats the
    user's (measured)."""
    user = write(
        home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": url(THIRD)}})
    )
    project = workspace / ".claude" / "settings.json"
    write(project, json.dumps({"env": {"ANTHROPIC_BASE_URL": url(OTHER)}}))
    local = workspace / ".claude" / "settings.local.json"
    write(local, json.dumps({"env": {"ANTHROPIC_BASE_URL": SERVER}}))
    assert derive("claude", home, workspace=workspace) == (LOCAL,)
    local.unlink()
    assert derive("claude", home, workspace=workspace) == (OTHER,)
    project.unlink()
    assert derive("claude", home, workspace=workspace) == (THIRD,)
    user.unlink()
    assert derive("claude", home, workspace=workspace) == CLAUDE_DEFAULTS


def test_claude_without_a_workspace_reads_no_project_settings(home: Path, workspace: Path) -> None:
    """``workspace`` None: only the user's settings and the variables count."""
    write(
        workspace / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": SERVER}})
    )
    assert derive("claude", home) == CLAUDE_DEFAULTS


def test_a_blank_setting_or_variable_counts_as_unset(home: Path) -> None:
    """The CLIs take an empty base URL as none: the next place is read."""
    write(home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": " "}}))
    assert derive("claude", home, environ={"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)
    found = derive(
        "claude", home, agent_env={"ANTHROPIC_BASE_URL": ""}, environ={"ANTHROPIC_BASE_URL": SERVER}
    )
    assert found == CLAUDE_DEFAULTS, "the agent's empty value hides the environment's"


# Codex: config.toml only.


def codex_config(home: Path, text: str) -> dict[str, str]:
    """``text`` as ``$CODEX_HOME/config.toml``; the environment naming that home."""
    write(home / "codex" / "config.toml", text)
    return {"CODEX_HOME": str(home / "codex")}


def provider(name: str, endpoint: Endpoint) -> str:
    return f'[model_providers.{name}]\nname = "{name}"\nbase_url = "{url(endpoint)}/v1"\n'


def test_codex_ignores_openai_base_url(home: Path) -> None:
    """Codex 0.169 sends the built-in provider's requests to its default hosts whatever
    ``OPENAI_BASE_URL`` says (measured: the variable's server got nothing)."""
    found = derive("codex", home, agent_env={"OPENAI_BASE_URL": SERVER})
    assert found == CODEX_DEFAULTS


def test_codex_openai_base_url_in_the_config_moves_the_openai_provider(home: Path) -> None:
    """The top-level ``openai_base_url`` replaces both defaults (measured)."""
    environ = codex_config(home, f'openai_base_url = "{SERVER}/v1"\n')
    assert derive("codex", home, environ=environ) == (LOCAL,)


def test_codex_takes_only_the_selected_provider(home: Path) -> None:
    """``model_provider`` selects one provider: the others and the defaults are not allowed."""
    text = 'model_provider = "mine"\n' + provider("mine", LOCAL) + provider("spare", OTHER)
    assert derive("codex", home, environ=codex_config(home, text)) == (LOCAL,)


def test_codex_profile_provider_beats_the_top_level_one(home: Path) -> None:
    """A selected profile's ``model_provider`` wins over the top-level ``model_provider``."""
    text = (
        'model_provider = "spare"\nprofile = "work"\n[profiles.work]\nmodel_provider = "mine"\n'
        + provider("mine", LOCAL)
        + provider("spare", OTHER)
    )
    assert derive("codex", home, environ=codex_config(home, text)) == (LOCAL,)


def test_codex_without_a_selection_allows_openai_and_every_defined_provider(home: Path) -> None:
    """Codex then uses ``openai``; an agent's ``args`` could select a defined one, which the
    derivation cannot see, so each defined provider's ``base_url`` is allowed too."""
    environ = codex_config(home, provider("mine", LOCAL) + provider("spare", OTHER))
    assert derive("codex", home, environ=environ) == (*CODEX_DEFAULTS, LOCAL, OTHER)


def test_codex_provider_without_base_url_uses_openai_hosts(home: Path) -> None:
    """A provider with no ``base_url`` is sent where OpenAI's requests go."""
    environ = codex_config(home, 'model_provider = "bare"\n[model_providers.bare]\nname = "b"\n')
    assert derive("codex", home, environ=environ) == CODEX_DEFAULTS


def test_codex_cannot_redefine_a_built_in_provider(home: Path) -> None:
    """``[model_providers.openai]`` is ignored by Codex (its own entry is kept)."""
    text = 'model_provider = "openai"\n' + provider("openai", LOCAL)
    assert derive("codex", home, environ=codex_config(home, text)) == CODEX_DEFAULTS


def test_codex_selecting_an_unknown_provider_gives_nothing(home: Path) -> None:
    """Codex refuses to start with a provider it does not know; Amazon Bedrock's host
    depends on an AWS region: ``allow`` names those."""
    assert derive("codex", home, environ=codex_config(home, 'model_provider = "nosuch"\n')) == ()
    bedrock = codex_config(home, 'model_provider = "amazon-bedrock"\n')
    assert derive("codex", home, environ=bedrock) == ()


def test_codex_local_providers_follow_codex_oss_variables(home: Path) -> None:
    """Ollama on localhost:11434 unless ``CODEX_OSS_PORT`` or ``CODEX_OSS_BASE_URL`` moves
    it."""
    environ = codex_config(home, 'model_provider = "ollama"\n')
    assert derive("codex", home, environ=environ) == (Endpoint("localhost", 11434),)
    moved = {**environ, "CODEX_OSS_PORT": "8081"}
    assert derive("codex", home, environ=moved) == (Endpoint("localhost", 8081),)
    assert derive("codex", home, environ={**moved, "CODEX_OSS_BASE_URL": SERVER}) == (LOCAL,)


def test_codex_home_defaults_to_dot_codex(home: Path) -> None:
    """Without ``CODEX_HOME`` the file is ``~/.codex/config.toml``."""
    write(home / ".codex" / "config.toml", 'model_provider = "mine"\n' + provider("mine", LOCAL))
    assert derive("codex", home) == (LOCAL,)


# Gemini CLI: variables before its one .env file; the host by auth type.


def test_gemini_environment_beats_its_dotenv_file(home: Path, workspace: Path) -> None:
    """A variable already set is never replaced by Gemini CLI's ``.env`` (measured)."""
    write(workspace / ".env", f"GOOGLE_GEMINI_BASE_URL={url(OTHER)}\n")
    found = derive("gemini", home, environ={"GOOGLE_GEMINI_BASE_URL": SERVER}, workspace=workspace)
    assert found == (LOCAL,)
    assert derive("gemini", home, workspace=workspace) == (OTHER,)


def test_gemini_reads_only_the_first_dotenv_file_it_finds(home: Path, workspace: Path) -> None:
    """From the workspace up, ``.gemini/.env`` before ``.env``, then the home's: the first
    that exists is the only one read, even when it does not set the variable."""
    write(home / ".env", f"GOOGLE_GEMINI_BASE_URL={url(THIRD)}\n")
    assert derive("gemini", home, workspace=workspace) == (THIRD,)
    write(workspace.parent / ".env", f"export GOOGLE_GEMINI_BASE_URL='{url(OTHER)}' # a parent\n")
    assert derive("gemini", home, workspace=workspace) == (OTHER,)
    write(workspace / ".gemini" / ".env", f'GOOGLE_GEMINI_BASE_URL="{SERVER}"\n')
    write(workspace / ".env", "GEMINI_API_KEY=x\n")
    assert derive("gemini", home, workspace=workspace) == (LOCAL,)
    (workspace / ".gemini" / ".env").unlink()
    assert derive("gemini", home, workspace=workspace) == (
        Endpoint("generativelanguage.googleapis.com", 443),
    )


def test_gemini_google_login_reaches_code_assist(home: Path, workspace: Path) -> None:
    """A Google login (``oauth-personal`` in the settings, the workspace's winning) sends the
    model's requests to Code Assist, not to the Gemini API's base URL."""
    login = {"security": {"auth": {"selectedType": "oauth-personal"}}}
    write(home / ".gemini" / "settings.json", "// comments are allowed\n" + json.dumps(login))
    environ = {"GOOGLE_GEMINI_BASE_URL": SERVER}
    assert derive("gemini", home, environ=environ) == (CODE_ASSIST, GEMINI_LOGIN)
    key = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    write(workspace / ".gemini" / "settings.json", json.dumps(key))
    assert derive("gemini", home, environ=environ, workspace=workspace) == (LOCAL,)


def test_gemini_vertex_ai_follows_its_location(home: Path) -> None:
    """``GOOGLE_GENAI_USE_VERTEXAI=true``: ``GOOGLE_VERTEX_BASE_URL``, else the host of
    ``GOOGLE_CLOUD_LOCATION``; the Gemini API's variable does not apply."""
    vertex = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_GEMINI_BASE_URL": url(OTHER)}
    assert derive("gemini", home, environ=vertex) == (Endpoint("aiplatform.googleapis.com", 443),)
    located = {**vertex, "GOOGLE_CLOUD_LOCATION": "europe-west4"}
    assert derive("gemini", home, environ=located) == (
        Endpoint("europe-west4-aiplatform.googleapis.com", 443),
    )
    regional = {**vertex, "GOOGLE_CLOUD_LOCATION": "eu"}
    assert derive("gemini", home, environ=regional) == (
        Endpoint("aiplatform.eu.rep.googleapis.com", 443),
    )
    moved = {**located, "GOOGLE_VERTEX_BASE_URL": SERVER}
    assert derive("gemini", home, environ=moved) == (LOCAL,)


# Subscription logins: where the token is refreshed, with the vendor's own host only.


def test_claude_login_refresh_host_only_with_the_default_api_host(home: Path) -> None:
    """``platform.claude.com`` (its ``TOKEN_URL``) comes with ``api.anthropic.com``; a base
    URL from a variable or a settings file is a gateway or a local server, without it."""
    assert CLAUDE_LOGIN in derive("claude", home)
    assert derive("claude", home, environ={"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)
    write(home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": SERVER}}))
    assert derive("claude", home) == (LOCAL,)


def test_codex_login_refresh_host_only_with_openai_hosts(home: Path) -> None:
    """``auth.openai.com`` comes with the built-in ``openai`` provider's hosts (and a
    defined provider's without a ``base_url``), never with a base URL of the config's."""
    assert CODEX_LOGIN in derive("codex", home)
    moved = codex_config(home, f'openai_base_url = "{SERVER}/v1"\n')
    assert derive("codex", home, environ=moved) == (LOCAL,)
    custom = codex_config(home, 'model_provider = "mine"\n' + provider("mine", LOCAL))
    assert derive("codex", home, environ=custom) == (LOCAL,)
    bare = codex_config(home, 'model_provider = "bare"\n[model_providers.bare]\nname = "b"\n')
    assert CODEX_LOGIN in derive("codex", home, environ=bare)


def test_codex_refresh_token_url_override_moves_the_login_host(home: Path) -> None:
    """``CODEX_REFRESH_TOKEN_URL_OVERRIDE`` replaces ``auth.openai.com`` (measured: Codex
    0.169.0 refreshed there); with a custom provider it is not read at all."""
    override = {"CODEX_REFRESH_TOKEN_URL_OVERRIDE": f"{url(OTHER)}/oauth/token"}
    assert derive("codex", home, agent_env=override) == (*OPENAI_HOSTS, OTHER)
    broken = {"CODEX_REFRESH_TOKEN_URL_OVERRIDE": "ftp://auth.example"}
    with pytest.raises(SandboxError, match="CODEX_REFRESH_TOKEN_URL_OVERRIDE"):
        derive("codex", home, agent_env=broken)
    custom = codex_config(home, 'model_provider = "mine"\n' + provider("mine", LOCAL))
    assert derive("codex", home, agent_env=broken, environ=custom) == (LOCAL,)


def test_gemini_login_refresh_host_only_with_a_google_login(home: Path, workspace: Path) -> None:
    """``oauth2.googleapis.com`` comes with ``oauth-personal`` (in the settings or by
    ``GOOGLE_GENAI_USE_GCA``) and Code Assist's own host; not with ``CODE_ASSIST_ENDPOINT``,
    an API key, Vertex AI, or the metadata server's ``compute-default-credentials``."""
    settings = home / ".gemini" / "settings.json"

    def auth(selected: str) -> None:
        write(settings, json.dumps({"security": {"auth": {"selectedType": selected}}}))

    auth("oauth-personal")
    assert derive("gemini", home) == (CODE_ASSIST, GEMINI_LOGIN)
    assert derive("gemini", home, environ={"CODE_ASSIST_ENDPOINT": SERVER}) == (LOCAL,)
    auth("compute-default-credentials")
    assert derive("gemini", home) == (CODE_ASSIST,)
    auth("gemini-api-key")
    assert derive("gemini", home) == (Endpoint("generativelanguage.googleapis.com", 443),)
    assert derive("gemini", home, environ={"GOOGLE_GEMINI_BASE_URL": SERVER}) == (LOCAL,)
    auth("vertex-ai")
    assert derive("gemini", home) == (Endpoint("aiplatform.googleapis.com", 443),)
    settings.unlink()
    write(workspace / ".env", "GOOGLE_GENAI_USE_GCA=true\n")
    assert derive("gemini", home, workspace=workspace) == (CODE_ASSIST, GEMINI_LOGIN)


# OpenCode: its merged configuration, the model's provider.


def opencode_config(providers: Mapping[str, object]) -> str:
    """An OpenCode configuration defining ``providers``."""
    return json.dumps({"provider": providers})


def base_url(endpoint: Endpoint) -> dict[str, object]:
    return {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": f"{url(endpoint)}/v1"}}


def test_opencode_later_configuration_wins(home: Path, tmp_path: Path) -> None:
    """Global ``opencode.json`` < ``opencode.jsonc`` < ``$OPENCODE_CONFIG`` <
    ``$OPENCODE_CONFIG_CONTENT`` (each measured with 1.18.33)."""
    folder = home / ".config" / "opencode"
    write(folder / "opencode.json", opencode_config({"mine": base_url(THIRD)}))
    assert derive("opencode", home, model="mine/m") == (THIRD,)
    jsonc = f"// a comment\n{opencode_config({'mine': base_url(OTHER)})[:-1]},\n}}"
    write(folder / "opencode.jsonc", jsonc)
    assert derive("opencode", home, model="mine/m") == (OTHER,)
    custom = write(tmp_path / "custom.json", opencode_config({"mine": base_url(LOCAL)}))
    environ = {"OPENCODE_CONFIG": str(custom)}
    assert derive("opencode", home, environ=environ, model="mine/m") == (LOCAL,)
    content = {"OPENCODE_CONFIG_CONTENT": opencode_config({"mine": base_url(THIRD)})}
    assert derive("opencode", home, environ=environ, agent_env=content, model="mine/m") == (THIRD,)


def test_opencode_ignores_the_workspace_configuration(home: Path, workspace: Path) -> None:
    """A provider set in the workspace's ``opencode.json`` or ``.opencode/`` took no effect
    on the pinned OpenCode (measured): the global one is what it reaches."""
    environ = opencode_env(home, SERVER, PROGRAM)
    for file in (workspace / "opencode.json", workspace / ".opencode" / "opencode.json"):
        write(file, opencode_config({"ralph": base_url(OTHER)}))
    model = f"ralph/{OPENCODE_MODEL}"
    assert derive("opencode", home, environ=environ, model=model, workspace=workspace) == (LOCAL,)


def test_opencode_fills_env_references_in_base_urls(home: Path) -> None:
    """``{env:NAME}`` in a ``baseURL`` is the variable's value, as OpenCode substitutes it."""
    folder = home / ".config" / "opencode"
    mine = {"options": {"baseURL": "{env:MODEL_HOST}/v1"}}
    write(folder / "opencode.json", opencode_config({"mine": mine}))
    found = derive("opencode", home, agent_env={"MODEL_HOST": SERVER}, model="mine/m")
    assert found == (LOCAL,)


def test_opencode_known_provider_follows_its_sdk_variable(home: Path) -> None:
    """Without a ``baseURL``, Anthropic's and OpenAI's SDKs read ``ANTHROPIC_BASE_URL`` and
    ``OPENAI_BASE_URL`` (measured), else their known hosts."""
    environ = {"ANTHROPIC_BASE_URL": SERVER, "OPENAI_BASE_URL": url(OTHER)}
    assert derive("opencode", home, environ=environ, model="anthropic/claude") == (LOCAL,)
    assert derive("opencode", home, environ=environ, model="openai/gpt-5") == (OTHER,)
    assert derive("opencode", home, model="groq/llama") == (Endpoint("api.groq.com", 443),)


def test_opencode_unknown_provider_gives_nothing(home: Path) -> None:
    """A provider neither configured nor known: nothing to allow (``allow`` names it)."""
    assert derive("opencode", home, model="nosuch/model") == ()
    assert derive("opencode", home, model="scripted") == ()


def test_opencode_without_a_model_allows_every_configured_provider(home: Path) -> None:
    """No model given and none in the configuration: OpenCode picks one of its providers, so
    each configured one is allowed."""
    folder = home / ".config" / "opencode"
    providers = {"mine": base_url(LOCAL), "anthropic": {}, "nosuch": {}}
    write(folder / "opencode.json", opencode_config(providers))
    assert derive("opencode", home) == (LOCAL, *ANTHROPIC)


# aider: its .env files over the environment; litellm's variables for the provider.


def test_aider_dotenv_files_beat_the_environment(home: Path, workspace: Path) -> None:
    """aider loads ``~/.env`` then the workspace's ``.env`` with override: the workspace's
    wins over the home's, both over the agent's ``env`` and the environment."""
    agent_env = {"OPENAI_API_BASE": url(THIRD)}
    found = derive(
        "aider", home, agent_env=agent_env, environ={"OPENAI_API_BASE": SERVER}, model="gpt-4o"
    )
    assert found == (THIRD,)
    write(home / ".env", f"OPENAI_API_BASE={url(OTHER)}\n")
    assert derive("aider", home, agent_env=agent_env, model="gpt-4o", workspace=workspace) == (
        OTHER,
    )
    write(workspace / ".env", f"OPENAI_API_BASE={SERVER}\n")
    assert derive("aider", home, agent_env=agent_env, model="gpt-4o", workspace=workspace) == (
        LOCAL,
    )


def test_aider_openai_variables_in_litellm_order(home: Path) -> None:
    """litellm reads ``OPENAI_BASE_URL`` before ``OPENAI_API_BASE``, which aider's
    ``AIDER_OPENAI_API_BASE`` (``--openai-api-base``) overwrites."""
    environ = {"OPENAI_API_BASE": url(THIRD), "AIDER_OPENAI_API_BASE": url(OTHER)}
    assert derive("aider", home, environ=environ, model="openai/x") == (OTHER,)
    both = {**environ, "OPENAI_BASE_URL": SERVER}
    assert derive("aider", home, environ=both, model="openai/x") == (LOCAL,)


def test_aider_each_provider_has_its_own_variables(home: Path) -> None:
    """Anthropic's ``ANTHROPIC_API_BASE`` before ``ANTHROPIC_BASE_URL``; OpenAI's variables
    do not move another provider."""
    environ = {"ANTHROPIC_BASE_URL": url(OTHER), "OPENAI_API_BASE": url(THIRD)}
    assert derive("aider", home, environ=environ, model="sonnet") == (OTHER,)
    both = {**environ, "ANTHROPIC_API_BASE": SERVER}
    assert derive("aider", home, environ=both, model="claude-sonnet-4-5") == (LOCAL,)
    gemini = {"GEMINI_API_BASE": SERVER}
    assert derive("aider", home, environ=gemini, model="gemini/gemini-2.5-pro") == (LOCAL,)


def test_aider_without_a_model_follows_aider_model_then_its_keys(home: Path) -> None:
    """``AIDER_MODEL``, else the model aider picks by the first API key set."""
    assert derive("aider", home, environ={"AIDER_MODEL": "deepseek"}) == (
        Endpoint("api.deepseek.com", 443),
    )
    keys = {"OPENAI_API_KEY": "sk-x", "ANTHROPIC_API_KEY": "sk-ant-x"}
    assert derive("aider", home, environ=keys) == ANTHROPIC
    assert derive("aider", home) == ()


def test_aider_unknown_provider_gives_nothing(home: Path) -> None:
    """A model litellm cannot place, or a provider with no known host: ``allow`` names it."""
    assert derive("aider", home, model="gemini-1.5-pro") == ()
    assert derive("aider", home, model="together_ai/llama") == ()


# Malformed files are skipped; values that are no URL are errors naming their place.


@pytest.mark.parametrize(
    "text", ['{"env": {"ANTHROPIC_BASE_URL": ', "[1, 2]", '{"env": "x"}', "\udcff", ""]
)
def test_a_malformed_settings_file_is_skipped(home: Path, text: str) -> None:
    """Broken JSON, another shape, bytes that are no UTF-8 or an empty file: as if absent
    (Claude Code 2.1.328 ignored a broken one, measured)."""
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(text.encode("utf-8", "surrogateescape"))
    assert derive("claude", home, environ={"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)


def test_a_malformed_toml_or_jsonc_file_is_skipped(home: Path) -> None:
    """Codex's broken ``config.toml`` leaves its defaults; OpenCode's broken file is passed
    over for the next."""
    environ = codex_config(home, 'model_provider = "mine"\n[model_providers.mine\n')
    assert derive("codex", home, environ=environ) == CODEX_DEFAULTS
    folder = home / ".config" / "opencode"
    write(folder / "opencode.json", opencode_config({"mine": base_url(LOCAL)}))
    write(folder / "opencode.jsonc", '{"provider": {"mine": {"options": {"baseURL": ')
    assert derive("opencode", home, model="mine/m") == (LOCAL,)


def test_settings_that_are_folders_or_fifos_are_skipped_without_blocking(
    home: Path, workspace: Path
) -> None:
    """A folder where a file was expected reads as absent, and a FIFO is never opened for a
    blocking read: an agent could plant one in the workspace between runs."""
    (workspace / ".claude" / "settings.local.json").mkdir(parents=True)
    os.mkfifo(workspace / ".claude" / "settings.json")
    os.mkfifo(workspace / ".env")
    found: list[tuple[Endpoint, ...]] = []

    def run() -> None:
        found.append(
            derive("claude", home, environ={"ANTHROPIC_BASE_URL": SERVER}, workspace=workspace)
        )
        found.append(derive("gemini", home, workspace=workspace))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(10)
    assert found == [(LOCAL,), (Endpoint("generativelanguage.googleapis.com", 443),)]


def test_an_oversized_settings_file_is_skipped(home: Path) -> None:
    """Over 1 MiB is no settings file ralph reads."""
    padding = " " * (1 << 20)
    write(
        home / ".claude" / "settings.json",
        json.dumps({"env": {"ANTHROPIC_BASE_URL": url(OTHER)}}) + padding,
    )
    assert derive("claude", home, environ={"ANTHROPIC_BASE_URL": SERVER}) == (LOCAL,)


def test_a_variable_that_is_no_url_names_the_variable_and_its_place(home: Path) -> None:
    """The run's start shows which variable to fix, and where it was set."""
    with pytest.raises(SandboxError, match=r"ANTHROPIC_BASE_URL in the agent's env .*ftp"):
        derive("claude", home, agent_env={"ANTHROPIC_BASE_URL": "ftp://models.example"})
    with pytest.raises(SandboxError, match=r"OPENAI_API_BASE in the environment .*no port"):
        derive("aider", home, environ={"OPENAI_API_BASE": "localhost"}, model="gpt-4o")


def test_a_setting_that_is_no_url_names_the_file_and_key(home: Path) -> None:
    """A string that is no URL, or a value of another type, in a file: its path and key."""
    settings = write(
        home / ".claude" / "settings.json", json.dumps({"env": {"ANTHROPIC_BASE_URL": "http://"}})
    )
    with pytest.raises(SandboxError) as raised:
        derive("claude", home)
    assert f"{settings}: env.ANTHROPIC_BASE_URL" in str(raised.value)
    environ = codex_config(home, 'model_provider = "mine"\n[model_providers.mine]\nbase_url = 5\n')
    with pytest.raises(
        SandboxError, match=r"config.toml: model_providers.mine.base_url must be a URL"
    ):
        derive("codex", home, environ=environ)


def test_an_error_never_shows_a_password_in_the_url(home: Path) -> None:
    """A base URL with credentials that does not parse is named without its password."""
    with pytest.raises(SandboxError) as raised:
        derive("gemini", home, environ={"GOOGLE_GEMINI_BASE_URL": "https://me:s3cret@host:99999"})
    assert "s3cret" not in str(raised.value)
    assert "GOOGLE_GEMINI_BASE_URL in the environment" in str(raised.value)


def test_a_vertex_location_that_is_no_region_names_the_variable(home: Path) -> None:
    """The location becomes part of a host name: anything but a region's name is refused."""
    environ = {"GOOGLE_GENAI_USE_VERTEXAI": "true", "GOOGLE_CLOUD_LOCATION": "evil.example/x"}
    with pytest.raises(SandboxError, match="GOOGLE_CLOUD_LOCATION in the environment"):
        derive("gemini", home, environ=environ)
