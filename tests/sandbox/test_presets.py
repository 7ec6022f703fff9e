"""The sandbox needs of section 6, as each built-in CLI's module declares them, and where
each preset's folders are on a machine."""

from __future__ import annotations

import posixpath

import pytest

from pipeline.core.agents import PRESETS as AGENT_PRESETS
from pipeline.core.config import PRESETS
from pipeline.core.sandbox import PresetPaths, SandboxError, empty_form, preset_paths

SANDBOX_PRESETS = {name: preset.sandbox for name, preset in AGENT_PRESETS.items()}

HOME = "/home/u"


def test_every_builtin_preset_has_its_sandbox_needs() -> None:
    """No preset is left without folders, variables and declared model endpoints."""
    assert set(SANDBOX_PRESETS) == set(PRESETS)
    for name, preset in AGENT_PRESETS.items():
        assert preset.sandbox.folders, name
        assert preset.sandbox.pass_env, name
        assert preset.endpoints.defaults or preset.endpoints.providers, name


def test_every_folder_is_a_plain_path_under_home() -> None:
    """Defaults are relative to ``$HOME``; read-only entries are plain names inside."""
    for preset in SANDBOX_PRESETS.values():
        for folder in preset.folders:
            assert not folder.default.startswith("/")
            assert posixpath.normpath(folder.default) == folder.default
            for name in folder.read_only:
                assert posixpath.normpath(name) == name
                assert not name.startswith(("/", ".."))


def test_claude_without_a_config_variable() -> None:
    """``~/.claude`` writable, ``~/.claude.json`` when present, its hooks and settings
    read-only on top."""
    paths = preset_paths(SANDBOX_PRESETS["claude"], {}, HOME)
    assert paths.writable == ("/home/u/.claude",)
    assert paths.writable_files == ("/home/u/.claude.json",)
    assert "/home/u/.claude/hooks" in paths.read_only
    assert "/home/u/.claude/settings.json" in paths.read_only


def test_a_variable_moves_a_folder() -> None:
    """``CLAUDE_CONFIG_DIR`` and ``CODEX_HOME`` replace the folder; ``XDG_*_HOME`` moves
    OpenCode's under it; a path written with a trailing slash is the same folder."""
    claude = preset_paths(SANDBOX_PRESETS["claude"], {"CLAUDE_CONFIG_DIR": "/cfg/c/"}, HOME)
    assert claude.writable == ("/cfg/c",)
    assert "/cfg/c/settings.json" in claude.read_only
    codex = preset_paths(SANDBOX_PRESETS["codex"], {"CODEX_HOME": "/opt/codex"}, HOME)
    assert codex.writable == ("/opt/codex",)
    opencode = preset_paths(SANDBOX_PRESETS["opencode"], {"XDG_CONFIG_HOME": "/x/conf"}, HOME)
    assert opencode.writable == (
        "/x/conf/opencode",
        "/home/u/.local/share/opencode",
        "/home/u/.cache/opencode",
        "/home/u/.local/state/opencode",
    )
    assert "/x/conf/opencode/plugin" in opencode.read_only


def test_a_relative_variable_is_ignored() -> None:
    """A CLI resolves a relative folder against its working directory, the workspace: the
    default stays, and the workspace is writable anyway."""
    paths = preset_paths(SANDBOX_PRESETS["codex"], {"CODEX_HOME": "rel/codex"}, HOME)
    assert paths.writable == ("/home/u/.codex",)


def test_aiders_settings_files_are_read_only() -> None:
    """aider's configuration files sit in ``$HOME`` itself, read-only; ``~/.aider`` is
    writable."""
    paths = preset_paths(SANDBOX_PRESETS["aider"], {}, HOME)
    assert paths == PresetPaths(
        writable=("/home/u/.aider",),
        read_only=(
            "/home/u/.aider.conf.yml",
            "/home/u/.aider.model.settings.yml",
            "/home/u/.aider.model.metadata.json",
        ),
    )


def test_every_read_only_entry_of_a_folder_has_an_empty_form() -> None:
    """Each entry bound read-only on top of a CLI's writable folder can be made inert when
    missing (a JSON settings file as ``{}``, instructions and TOML as an empty file, the rest a
    folder), and a name of no known kind is refused rather than guessed."""
    forms = {
        name: empty_form(name)
        for preset in SANDBOX_PRESETS.values()
        for folder in preset.folders
        for name in folder.read_only
    }
    assert forms["settings.json"] == b"{}\n"
    assert forms["opencode.jsonc"] == b"{}\n"
    assert forms["config.toml"] == forms["CLAUDE.md"] == b""
    assert forms["commands"] is None
    with pytest.raises(SandboxError, match="yml"):
        empty_form(".aider.conf.yml")
