"""Which preset a run of a workspace followed, kept for ``ralph resume`` (I/O: files in the
workspace's git directory).

A run records the digest of the configuration it started with (``RunStarted.config_digest``),
and a preset's run starts with the workspace's ``ralph.toml`` merged with the preset. Before
such a run starts, the preset's text is kept as ``workflows/<digest>/<name>.toml`` in the
workspace's state directory (``.git/ralph``, out of reach of ``git clean``): a resume finds
it by the digest its run recorded and merges the same workflow over the workspace's
``ralph.toml`` again, exactly as it would read a plain run's ``ralph.toml`` again. Keyed by
content, a record is written once and shared by every run that started with that
configuration; it is written before the run exists, so no crash can leave a run without it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

from pipeline.app.workflows._preset import NAME_PATTERN, Preset, PresetError, parse_preset
from pipeline.handlers.runtime import WorkspaceLayout

__all__ = ["recall_workflow", "remember_workflow"]

_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def _folder(layout: WorkspaceLayout, digest: str) -> Path | None:
    """The record's folder, None for a digest that is not one (it comes from a log)."""
    if not _DIGEST.fullmatch(digest):
        return None
    return layout.state_dir / "workflows" / digest


def remember_workflow(layout: WorkspaceLayout, digest: str, preset: Preset) -> None:
    """Keep ``preset`` as the workflow of the configuration whose digest is ``digest``.
    Raises OSError when it cannot be written (a run must not start without it)."""
    folder = _folder(layout, digest)
    if folder is None:
        raise ValueError(f"not a configuration digest: {digest!r}")
    target = folder / f"{preset.name}.toml"
    if target.is_file() and target.read_text("utf-8") == preset.text:
        return
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / f".{preset.name}.toml.{os.getpid()}"
    partial.write_text(preset.text, "utf-8")
    os.replace(partial, target)  # whole or not at all, whoever reads it


def recall_workflow(layout: WorkspaceLayout, digest: str) -> Preset | None:
    """The preset a run whose configuration digest is ``digest`` started with; None when it
    started without one. Raises :class:`PresetError` when the record is damaged, and OSError
    when it cannot be read."""
    folder = _folder(layout, digest)
    if folder is None or not folder.is_dir():
        return None
    found = sorted(
        entry
        for entry in folder.iterdir()
        if entry.suffix == ".toml" and NAME_PATTERN.fullmatch(entry.stem)
    )
    if len(found) != 1:
        raise PresetError(f"{folder}: expected one preset's file, found {len(found)}")
    (path,) = found
    return parse_preset(path.stem, path.read_text("utf-8"), str(path))
