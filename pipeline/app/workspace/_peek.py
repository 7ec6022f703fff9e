"""A look at one setting of a workspace's ``ralph.toml`` before anything is opened (I/O:
reads the file): where its store is, whether runs go into worktrees, which files it names."""

from __future__ import annotations

from pathlib import Path

from pipeline.core.config import ConfigError, RalphConfig, parse_config
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import store_path

__all__ = ["locate_store", "peek_config", "peeked_store"]


def peek_config(root: Path) -> RalphConfig | None:
    """``root``'s ``ralph.toml``, parsed; None when it is missing or malformed, which the
    command that opens the workspace for real then says."""
    try:
        return parse_config(WorkspaceLayout(root=root).config.read_text("utf-8"), "ralph.toml")
    except (OSError, ConfigError):
        return None


def locate_store(layout: WorkspaceLayout, configured: str | None, store: str | None) -> str:
    """Where a workspace's events go, from its parts: ``store`` (``--store``; None: not
    given), else its ``[store] url`` (``configured``; None: not set) relative to the
    workspace's ``layout``, else the default store (``.git/ralph/pipeline.db``)."""
    if store is not None:
        return store
    if configured is None:
        return str(layout.store)
    path = store_path(configured)
    if path is None or path.is_absolute():
        return configured
    return str(layout.root / path)


def peeked_store(root: Path, store: str | None = None) -> str:
    """Where workspace ``root``'s events go (:func:`locate_store`), its ``[store] url`` from
    a look at its ``ralph.toml`` (:func:`peek_config`)."""
    config = peek_config(root)
    url = None if config is None else config.store.url
    return locate_store(WorkspaceLayout(root=root), url, store)
