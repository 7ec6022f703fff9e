"""A look at one setting of a workspace's ``ralph.toml`` before anything is opened (I/O:
reads the file): where its store is, whether runs go into worktrees, which files it names."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.config import ConfigError, RalphConfig, parse_config
from pipeline.handlers.runtime import WorkspaceLayout

__all__ = ["peek_config"]


def peek_config(root: Path) -> RalphConfig | None:
    """``root``'s ``ralph.toml``, parsed; None when it is missing or malformed, which the
    command that opens the workspace for real then says."""
    try:
        return parse_config(WorkspaceLayout(root=root).config.read_text("utf-8"), "ralph.toml")
    except (OSError, ConfigError):
        return None
