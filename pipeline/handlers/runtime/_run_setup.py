"""What a run is set up with: its id, the user's prompt, the environment its agents get, and the
paths of ralph's own that no commit may take (its files, and those its commands wrote)."""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import Mapping
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.sandbox import RALPH_ONLY_VARIABLES
from pipeline.handlers.runtime._layout import WorkspaceLayout

__all__ = [
    "PromptSource",
    "agent_environment",
    "config_and_prompt",
    "new_run_id",
    "note_written",
    "own_paths",
    "ralph_executable",
    "without_ralph_credentials",
]


def without_ralph_credentials(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` less :data:`RALPH_ONLY_VARIABLES`."""
    return {
        name: value
        for name, value in environ.items()
        if not any(fnmatchcase(name, pattern) for pattern in RALPH_ONLY_VARIABLES)
    }


@frozen(kw_only=True)
class PromptSource:
    """The user's prompt for a new run: literal ``text``, or the file at ``path``."""

    text: str | None = None
    path: Path | None = None

    def read(self) -> bytes:
        """The prompt's bytes: the text's, or the file's as it is now."""
        if self.text is not None and self.path is None:
            return self.text.encode()
        if self.path is not None and self.text is None:
            return self.path.read_bytes()
        raise PipelineError("a new run needs exactly one of a prompt text or a prompt file")


def new_run_id(now: datetime) -> str:
    """A run id: the UTC time as ``YYYYMMDD-HHMMSS`` plus random hex, unique within a second."""
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def ralph_executable() -> Path:
    """The ``ralph`` program of this installation (agents call it, e.g. ``ralph emit``)."""
    beside = Path(sys.executable).parent / "ralph"
    if beside.is_file():
        return beside
    found = shutil.which("ralph")
    return Path(found) if found else beside


def agent_environment(
    layout: WorkspaceLayout, run_id: str, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment every agent of run ``run_id`` gets: ``base`` (default: this process's)
    less ralph's store URL and credentials (:data:`RALPH_ONLY_VARIABLES`), plus the
    ``RALPH_*`` variables of the run, with ``ralph`` on ``PATH`` and ``PWD`` the workspace."""
    env = without_ralph_credentials(os.environ if base is None else base)
    ralph = ralph_executable()
    path = env.get("PATH", "")
    env.update(
        # agents run in the workspace; a PWD inherited from ``ralph -C DIR`` names another
        # folder, and some CLIs take their project folder from PWD
        PWD=str(layout.root),
        RALPH_RUN_ID=run_id,
        RALPH_EVENTS_FILE=str(layout.events_file(run_id)),
        RALPH_WORKSPACE_ROOT=str(layout.root),
        RALPH_BIN=str(ralph),
        PATH=f"{ralph.parent}{os.pathsep}{path}" if path else str(ralph.parent),
    )
    return env


_SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")


def config_and_prompt(layout: WorkspaceLayout, prompt_file: str) -> tuple[str, ...]:
    """The workspace's ``ralph.toml`` and prompt file (relative to it, when inside)."""
    return _inside(layout, [layout.config, layout.root.resolve() / prompt_file])


def own_paths(
    layout: WorkspaceLayout, prompt_file: str, own_files: tuple[Path, ...] = ()
) -> tuple[str, ...]:
    """ralph's own files inside the repository (relative to it), which no commit may take and
    no dirty check counts: its config, the prompt file, a store given as a path in the work
    tree (with SQLite's side files), and what ralph's commands wrote there (reports,
    :func:`note_written`)."""
    paths = [*own_files]
    for store in own_files:
        paths += [store.with_name(store.name + s) for s in _SQLITE_SIDE_FILES]
    kept = (*config_and_prompt(layout, prompt_file), *_inside(layout, paths), *_written(layout))
    return tuple(dict.fromkeys(kept))


def _inside(layout: WorkspaceLayout, paths: list[Path]) -> tuple[str, ...]:
    root = layout.root.resolve()
    kept: list[str] = []
    for path in paths:
        try:
            kept.append(path.resolve().relative_to(root).as_posix())
        except ValueError:
            continue  # outside the repository: no commit can take it anyway
    return tuple(kept)


def note_written(layout: WorkspaceLayout, path: Path) -> None:
    """Remember that a ralph command (``ralph report``) wrote ``path``, so that no run counts
    it as the person's change nor commits it; nothing when it lies outside the work tree.
    The list is kept in :attr:`WorkspaceLayout.written`, in the git directory, out of an
    agent's reach."""
    inside = _inside(layout, [path])
    if not inside or "\n" in inside[0] or inside[0] in _written(layout):
        return
    listed = layout.written
    listed.parent.mkdir(parents=True, exist_ok=True)
    with listed.open("a", encoding="utf-8") as file:
        file.write(inside[0] + "\n")


def _written(layout: WorkspaceLayout) -> tuple[str, ...]:
    """The files ralph's commands wrote in the work tree that are still there."""
    try:
        lines = layout.written.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return ()
    return tuple(line for line in lines if line and (layout.root / line).is_file())
