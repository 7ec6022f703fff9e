"""The workflow presets shipped with ralph: ``presets/NAME.toml`` in this package's data (I/O:
package data, read-only).
"""

from __future__ import annotations

import importlib.resources
from importlib.resources.abc import Traversable
from typing import Final

from pipeline.app.workflows._preset import NAME_PATTERN, Preset, PresetError, parse_preset

__all__ = ["DEFAULT_PRESET", "load_preset", "preset_names", "shipped_presets"]

DEFAULT_PRESET: Final = "code-assist"
"""The preset that is ralph's built-in pipeline: what a run follows without hats of its own."""

_SUFFIX: Final = ".toml"


def _folder() -> Traversable:
    return importlib.resources.files("pipeline.app.workflows") / "presets"


def preset_names() -> tuple[str, ...]:
    """The names of the shipped presets, sorted."""
    names = (
        entry.name.removesuffix(_SUFFIX)
        for entry in _folder().iterdir()
        if entry.name.endswith(_SUFFIX) and entry.is_file()
    )
    return tuple(sorted(name for name in names if NAME_PATTERN.fullmatch(name)))


def load_preset(name: str) -> Preset:
    """The shipped preset called ``name``. Raises :class:`PresetError` naming the known ones
    when there is none (a name is looked up among them, never used as a path)."""
    known = preset_names()
    if name not in known:
        raise PresetError(f"unknown preset {name!r} (known: {', '.join(known)})")
    entry = _folder() / f"{name}{_SUFFIX}"
    return parse_preset(name, entry.read_text("utf-8"), f"preset {name} ({entry.name})")


def shipped_presets() -> tuple[Preset, ...]:
    """Every shipped preset, by name."""
    return tuple(load_preset(name) for name in preset_names())
