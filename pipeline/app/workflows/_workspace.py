"""A workspace's ``ralph.toml`` with a preset's workflow over it (I/O: reads the file)."""

from __future__ import annotations

from pathlib import Path

from pipeline.app.workflows._merge import apply_preset
from pipeline.app.workflows._preset import Preset
from pipeline.core.config import ConfigError
from pipeline.handlers.runtime import WorkspaceLayout

__all__ = ["config_with_preset"]


def config_with_preset(root: Path, preset: Preset) -> tuple[str, str]:
    """The text of ``root``'s ``ralph.toml`` with ``preset``'s workflow over it, and the name
    errors give that text (``.../ralph.toml with the preset NAME``). Raises
    :class:`~pipeline.core.config.ConfigError` when the file is missing (saying how to write one),
    unreadable or no TOML."""
    path = WorkspaceLayout(root=root).config
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError as error:
        raise ConfigError(
            f"{path}: not found; run `ralph init --preset {preset.name}` there to write a "
            "starter configuration"
        ) from error
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot read it: {error}") from error
    return apply_preset(text, preset, str(path)), f"{path} with the preset {preset.name}"
