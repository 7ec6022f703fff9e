"""Pointing the real Codex CLI at the scripted model server, in an isolated home.

Codex reads ``$CODEX_HOME/config.toml``: a ``model_providers`` entry whose ``base_url`` is the
server's ``/v1`` and whose ``wire_api`` is ``responses`` makes it ``POST /v1/responses`` there,
with the key from the variable ``env_key`` names (any value will do). ``HOME`` and the XDG
folders are fresh too, so the person's own configuration is never read or written. Analytics
are off; with no login Codex calls nothing else.
"""

from __future__ import annotations

from pathlib import Path

from tests.real_agents.repo import path_with

API_KEY_VARIABLE = "SCRIPTED_MODEL_API_KEY"
"""The variable the provider's ``env_key`` names: a dummy key."""


def codex_config(server_url: str, model: str = "scripted") -> str:
    """``config.toml`` for a Codex that speaks to the server at ``server_url``.

    One retry of a failed request or stream (instead of 4 and 5), so an error the script
    answers on purpose ends the invocation in seconds.
    """
    return (
        f'model = "{model}"\n'
        'model_provider = "scripted"\n\n'
        "[model_providers.scripted]\n"
        'name = "ralph scripted model"\n'
        f'base_url = "{server_url}/v1"\n'
        'wire_api = "responses"\n'
        f'env_key = "{API_KEY_VARIABLE}"\n'
        "request_max_retries = 1\n"
        "stream_max_retries = 1\n\n"
        "[analytics]\n"
        "enabled = false\n"
    )


def codex_environment(home: Path, server_url: str, program: Path) -> dict[str, str]:
    """The variables that make ``program`` (codex) use the server, with ``home`` as its only
    home: ``home/codex`` is ``CODEX_HOME``, holding :func:`codex_config`."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(server_url))
    return {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        API_KEY_VARIABLE: "scripted-dummy-key",
        "PATH": path_with(program),
    }
