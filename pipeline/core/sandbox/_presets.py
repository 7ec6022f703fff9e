"""What each agent preset needs in the sandbox: its folders under ``$HOME``, its variables and
where its model endpoint is set (pure data, beside ``pipeline.core.config.PRESETS``).

The table is section 6 of ``docs/research/sandbox-design.md`` (folders), section 7 (variables)
and section 8 (base URLs). A CLI's folders are writable (OAuth refreshes rotate tokens there),
but the files in them that hold code the person's own, unsandboxed CLI would run later (a
Claude Code hook, an OpenCode plugin) are bound read-only on top. A command agent has no
preset and gets none of this.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Final, final

from attrs import frozen

from pipeline.core.sandbox._endpoint import Endpoint
from pipeline.core.sandbox._paths import join, normal_absolute

__all__ = [
    "SANDBOX_PRESETS",
    "BaseUrlSettings",
    "ConfigFolder",
    "ConfigKey",
    "PresetPaths",
    "SandboxPreset",
    "preset_paths",
]


@final
@frozen(kw_only=True)
class ConfigFolder:
    """A folder an agent CLI keeps its configuration, credentials or cache in.

    It is ``$HOME/default``, or, when ``variable`` holds an absolute path, that path joined
    with ``suffix`` (``$XDG_CONFIG_HOME/opencode``, ``$CLAUDE_CONFIG_DIR``).
    """

    default: str
    variable: str | None = None
    suffix: str = ""
    read_only: tuple[str, ...] = ()
    """Entries inside that hold code or settings the CLI obeys: bound read-only on top."""

    def locate(self, environ: Mapping[str, str], home: str) -> str:
        """Where the folder is for a CLI started with ``environ`` and ``home``."""
        moved = normal_absolute(environ.get(self.variable, "")) if self.variable else None
        if moved is not None:
            return join(moved, self.suffix) if self.suffix else moved
        return join(home, self.default)


@final
@frozen(kw_only=True)
class ConfigKey:
    """A setting in one of the CLI's files that may name its base URL (read in section 8's
    derivation, never here): the file, relative to the preset's first folder, and the key."""

    file: str
    key: str


@final
@frozen(kw_only=True)
class BaseUrlSettings:
    """Where an agent CLI takes its model endpoint from, in the order it looks.

    ``variables`` (the agent's ``env`` first, then the environment), then ``config_keys``;
    failing those, ``defaults``, or, with ``by_provider``, the host of the model's provider.
    """

    variables: tuple[str, ...] = ()
    config_keys: tuple[ConfigKey, ...] = ()
    defaults: tuple[Endpoint, ...] = ()
    by_provider: bool = False


@final
@frozen(kw_only=True)
class SandboxPreset:
    """One preset's needs: ``folders`` (writable, made when missing), ``files`` under
    ``$HOME`` (writable, bound only when present), ``read_only_files`` under ``$HOME``,
    the ``pass_env`` patterns and its base-URL settings."""

    folders: tuple[ConfigFolder, ...]
    pass_env: tuple[str, ...]
    base_url: BaseUrlSettings
    files: tuple[str, ...] = ()
    read_only_files: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class PresetPaths:
    """A preset's paths on one machine: what the mount plan binds back into ``$HOME``."""

    writable: tuple[str, ...] = ()
    """Folders, which the handler creates (``0700``) when missing."""
    writable_files: tuple[str, ...] = ()
    """Files bound writable only when they exist."""
    read_only: tuple[str, ...] = ()
    """Bound read-only on top, when they exist."""


def preset_paths(preset: SandboxPreset, environ: Mapping[str, str], home: str) -> PresetPaths:
    """Where ``preset``'s folders and files are for an agent run with ``environ`` (its
    ``env`` included) and ``home``."""
    writable = tuple(dict.fromkeys(f.locate(environ, home) for f in preset.folders))
    inside = (
        join(folder.locate(environ, home), name)
        for folder in preset.folders
        for name in folder.read_only
    )
    return PresetPaths(
        writable=writable,
        writable_files=tuple(join(home, name) for name in preset.files),
        read_only=tuple(
            dict.fromkeys([*inside, *(join(home, name) for name in preset.read_only_files)])
        ),
    )


_HTTPS: Final = 443

_OPENCODE_CODE: Final = ("opencode.json", "opencode.jsonc", "plugin", "agent", "command")

SANDBOX_PRESETS: Final[Mapping[str, SandboxPreset]] = types.MappingProxyType(
    {
        "claude": SandboxPreset(
            folders=(
                ConfigFolder(
                    default=".claude",
                    variable="CLAUDE_CONFIG_DIR",
                    read_only=(
                        "settings.json",
                        "settings.local.json",
                        "commands",
                        "agents",
                        "hooks",
                        "plugins",
                        "CLAUDE.md",
                    ),
                ),
            ),
            files=(".claude.json",),
            pass_env=(
                "ANTHROPIC_*",
                "CLAUDE_CODE_*",
                "CLAUDE_CONFIG_DIR",
                "DISABLE_*",
                "IS_SANDBOX",
            ),
            base_url=BaseUrlSettings(
                variables=("ANTHROPIC_BASE_URL",),
                config_keys=(ConfigKey(file="settings.json", key="env.ANTHROPIC_BASE_URL"),),
                defaults=(Endpoint("api.anthropic.com", _HTTPS),),
            ),
        ),
        "codex": SandboxPreset(
            folders=(
                ConfigFolder(
                    default=".codex",
                    variable="CODEX_HOME",
                    read_only=("config.toml", "AGENTS.md", "prompts", "rules"),
                ),
            ),
            pass_env=("OPENAI_*", "CODEX_*"),
            # no variable: Codex 0.169 ignores OPENAI_BASE_URL (measured), only its config moves it
            base_url=BaseUrlSettings(
                config_keys=(
                    ConfigKey(file="config.toml", key="model_providers.*.base_url"),
                    ConfigKey(file="config.toml", key="openai_base_url"),
                ),
                defaults=(Endpoint("api.openai.com", _HTTPS), Endpoint("chatgpt.com", _HTTPS)),
            ),
        ),
        "gemini": SandboxPreset(
            folders=(
                ConfigFolder(
                    default=".gemini",
                    read_only=("settings.json", "commands", "extensions", "GEMINI.md"),
                ),
            ),
            pass_env=("GEMINI_*", "GOOGLE_*"),
            base_url=BaseUrlSettings(
                variables=("GOOGLE_GEMINI_BASE_URL",),
                defaults=(Endpoint("generativelanguage.googleapis.com", _HTTPS),),
            ),
        ),
        "opencode": SandboxPreset(
            folders=(
                ConfigFolder(
                    default=".config/opencode",
                    variable="XDG_CONFIG_HOME",
                    suffix="opencode",
                    read_only=_OPENCODE_CODE,
                ),
                ConfigFolder(
                    default=".local/share/opencode", variable="XDG_DATA_HOME", suffix="opencode"
                ),
                ConfigFolder(
                    default=".cache/opencode", variable="XDG_CACHE_HOME", suffix="opencode"
                ),
                ConfigFolder(
                    default=".local/state/opencode", variable="XDG_STATE_HOME", suffix="opencode"
                ),
            ),
            # and the provider keys its configuration names with {env:NAME} (section 7), which
            # only the handler can read
            pass_env=("OPENCODE_*",),
            base_url=BaseUrlSettings(
                config_keys=(ConfigKey(file="opencode.json", key="provider.*.options.baseURL"),),
                by_provider=True,
            ),
        ),
        "aider": SandboxPreset(
            folders=(ConfigFolder(default=".aider"),),
            read_only_files=(
                ".aider.conf.yml",
                ".aider.model.settings.yml",
                ".aider.model.metadata.json",
            ),
            pass_env=("AIDER_*", "OPENAI_*", "ANTHROPIC_*", "GEMINI_*"),
            # litellm's order for OpenAI (each provider's: LITELLM_BASE_URL_VARIABLES)
            base_url=BaseUrlSettings(
                variables=("OPENAI_BASE_URL", "OPENAI_API_BASE"), by_provider=True
            ),
        ),
    }
)
"""The sandbox needs of each built-in preset, by the preset's name."""
