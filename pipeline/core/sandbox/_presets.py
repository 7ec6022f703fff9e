"""What an agent CLI needs in the sandbox, as a type: its folders under ``$HOME`` and its
variables (pure data; each CLI's module in ``pipeline.core.agents`` declares its own).

Section 6 of ``docs/research/sandbox-design.md`` (folders) and section 7 (variables). A CLI's
folders are writable (OAuth refreshes rotate tokens there), but the files in them that hold
code the person's own, unsandboxed CLI would run later (a hook, a plugin) are bound read-only
on top. A command agent has no preset and gets none of this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import final

from attrs import field, frozen

from pipeline.core.sandbox._paths import each_absolute, join, normal_absolute

__all__ = [
    "ConfigFolder",
    "PresetPaths",
    "SandboxPreset",
    "preset_paths",
]


@final
@frozen(kw_only=True)
class ConfigFolder:
    """A folder an agent CLI keeps its configuration, credentials or cache in.

    It is ``$HOME/default``, or, when ``variable`` holds an absolute path, that path joined
    with ``suffix`` (``$XDG_CONFIG_HOME/NAME``, ``$NAME_CONFIG_DIR``).
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
class SandboxPreset:
    """One agent CLI's needs: ``folders`` (writable, made when missing), ``files`` under
    ``$HOME`` (writable, bound only when present), ``read_only_files`` under ``$HOME`` and
    the ``pass_env`` patterns."""

    folders: tuple[ConfigFolder, ...]
    pass_env: tuple[str, ...]
    files: tuple[str, ...] = ()
    read_only_files: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class PresetPaths:
    """A preset's paths on one machine: what the mount plan binds back into ``$HOME``."""

    writable: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Folders, which the handler creates (``0700``) when missing."""
    writable_files: tuple[str, ...] = field(default=(), validator=each_absolute)
    """Files bound writable only when they exist."""
    read_only: tuple[str, ...] = field(default=(), validator=each_absolute)
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
