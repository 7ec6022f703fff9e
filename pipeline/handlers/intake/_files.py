"""Which events file agents write to: the run's own, named by the marker (I/O: small files).

A fresh run gets ``.ralph/events-<run id>.jsonl`` (the run id starts with the UTC time, so the
files sort by age, and ends with random hex, so two runs in one second differ). The marker
``.ralph/current-events`` names it, relative to the workspace root. Stale lines from an earlier
run can never reach a new one, because the new run reads only its own file.

The marker is input like any other file an agent can touch. A path that is absolute, holds
``..``, lies outside ``.ralph/`` or does not end in ``.jsonl`` is refused, so no agent can
redirect the engine's reads or writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from pipeline.errors import PipelineError

__all__ = [
    "DEFAULT_EVENTS_FILE",
    "MARKER",
    "EventsFileError",
    "checked_events_path",
    "events_file_for",
    "read_marker",
    "workspace_root",
    "write_marker",
]

MARKER = ".ralph/current-events"
"""The marker file, relative to the workspace root."""

DEFAULT_EVENTS_FILE = ".ralph/events.jsonl"
"""The events file used when no marker names one."""


class EventsFileError(PipelineError, ValueError):
    """The events file cannot be found or the marker names a path it may not."""


def checked_events_path(text: str, source: str = MARKER) -> PurePosixPath:
    """``text`` as a relative events-file path, or :class:`EventsFileError` saying why not."""
    value = text.strip()
    path = PurePosixPath(value)
    if not value:
        raise EventsFileError(f"{source} is empty; it must name a .ralph/*.jsonl file")
    if path.is_absolute() or value.startswith("\\") or ":" in path.parts[0]:
        raise EventsFileError(f"{source} names an absolute path {value!r}; only .ralph/*.jsonl")
    if ".." in path.parts:
        raise EventsFileError(f"{source} names {value!r}, which climbs out with '..'")
    if len(path.parts) < 2 or path.parts[0] != ".ralph":
        raise EventsFileError(f"{source} names {value!r}, which is outside .ralph/")
    if path.suffix != ".jsonl":
        raise EventsFileError(f"{source} names {value!r}, which is not a .jsonl file")
    return path


def read_marker(root: Path) -> PurePosixPath | None:
    """The events file the marker under ``root`` names (None: no marker)."""
    marker = root / MARKER
    try:
        text = marker.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise EventsFileError(f"cannot read {marker}: {error}") from error
    return checked_events_path(text, str(marker))


def write_marker(root: Path, events_file: Path) -> None:
    """Point the marker under ``root`` at ``events_file`` (written whole, then renamed)."""
    relative = events_file.relative_to(root).as_posix()
    checked_events_path(relative, "the events file")
    marker = root / MARKER
    marker.parent.mkdir(parents=True, exist_ok=True)
    partial = marker.with_name(marker.name + ".tmp")
    partial.write_text(relative + "\n", "utf-8")
    os.replace(partial, marker)


def workspace_root(start: Path, environ: Mapping[str, str]) -> Path | None:
    """``RALPH_WORKSPACE_ROOT``, else the nearest directory from ``start`` up holding
    ``.ralph/``; None when there is neither."""
    given = environ.get("RALPH_WORKSPACE_ROOT")
    if given:
        return Path(given)
    for folder in (start, *start.parents):
        if (folder / ".ralph").is_dir():
            return folder
    return None


def events_file_for(start: Path, environ: Mapping[str, str], file_option: Path | None) -> Path:
    """Where ``ralph emit`` writes, in this order: ``RALPH_EVENTS_FILE``; the marker under the
    workspace root; ``--file``; the default file under the workspace root (or ``start``)."""
    given = environ.get("RALPH_EVENTS_FILE")
    if given:
        return Path(given)
    root = workspace_root(start, environ)
    if root is not None:
        named = read_marker(root)
        if named is not None:
            return root / named
    if file_option is not None:
        return file_option
    return (root or start) / DEFAULT_EVENTS_FILE
