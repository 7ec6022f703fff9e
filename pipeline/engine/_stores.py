"""What the commands that act on a workspace's runs share: where its store is (I/O: looks
for the store's file), and whether a person's text can be kept there."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import store_path

__all__ = ["existing_store", "storable"]


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


def storable(text: str, what: str, refuse: Callable[[str], Exception]) -> None:
    """Raise ``refuse(message)`` when no store can keep ``text``, which a person gave as
    ``what`` ("the answer"): it holds a NUL character, or bytes that are not UTF-8."""
    if "\x00" in text:
        raise refuse(f"{what} holds a NUL character")
    if not text.isascii():
        try:
            text.encode()
        except UnicodeEncodeError:
            # Bytes of the command line that are not UTF-8 arrive as lone surrogates: no store
            # can keep them, and no agent could read them.
            raise refuse(f"{what} is not UTF-8 text") from None
