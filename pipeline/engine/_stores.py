"""Where a workspace's runs are, for the commands that act on one of them (I/O: looks for
the store's file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import store_path

__all__ = ["existing_store"]


def existing_store(root: Path, store: str | None, refuse: Callable[[str], Exception]) -> str:
    """``store``, else workspace ``root``'s default store; raises ``refuse(message)`` when it
    names a SQLite file that is not there (the workspace has no runs), before anything would
    create it."""
    layout = WorkspaceLayout(root=root.resolve())
    location = str(layout.store) if store is None else store
    path = store_path(location)
    if path is not None and not path.is_file():
        raise refuse(f"no runs in {layout.root} (no {path})")
    return location
