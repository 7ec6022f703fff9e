"""What a new git worktree of a workspace needs that git does not carry (I/O: git and files),
for ``ralph fork`` and ``ralph run --worktree``: the configuration and the prompt file when
untracked, the untracked files the configuration names, the top-level files of ``.ralph/``
(a scripted agent's script) but no run's own state, and the records of the presets runs
started with."""

from __future__ import annotations

import shutil
from pathlib import Path

from pipeline.app.workspace._peek import peek_config
from pipeline.events import Role
from pipeline.handlers.runtime import WorkspaceLayout, git_out

__all__ = ["carry_setup"]


def carry_setup(root: Path, target: Path) -> None:
    """Copy into the new worktree ``target`` what workspace ``root`` has that its commit
    lacks and a run there needs. Raises ``OSError`` and ``GitError``."""
    layout, own = WorkspaceLayout(root=root), WorkspaceLayout(root=target)
    for name in ("ralph.toml", "PROMPT.md", *_untracked_named(root)):
        copy = target / name
        # The worktree's commit may hold a symlinked folder where the source has none.
        if not copy.parent.resolve().is_relative_to(target.resolve()):
            continue
        if (root / name).is_file() and not copy.exists():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / name, copy)
    # ralph's folder holds what the configuration may name (a scripted agent's script); not
    # the lock, the agent group or other runs' events files.
    if layout.ralph_dir.is_dir():
        own.ralph_dir.mkdir(parents=True, exist_ok=True)
        for entry in layout.ralph_dir.iterdir():
            if entry.is_file() and not entry.is_symlink() and _carried(entry.name):
                shutil.copy2(entry, own.ralph_dir / entry.name)
    if (layout.state_dir / "workflows").is_dir():
        # A run of a preset reads its workflow's record at resume.
        shutil.copytree(layout.state_dir / "workflows", own.state_dir / "workflows", symlinks=True)


def _untracked_named(root: Path) -> list[str]:
    """The files ``root``'s ``ralph.toml`` names that git calls untracked: an ignored one (a
    tool's folder, a virtual environment's script) is no part of the work, and ralph's own
    folder is carried by its own rule."""
    listed = set(git_out(root, "ls-files", "-z", "--others", "--exclude-standard").split("\0"))
    return [name for name in _named_files(root) if name in listed]


def _named_files(root: Path) -> list[str]:
    """The files of the workspace its ``ralph.toml`` names (a response schema, the prompt
    file, a gate's, the final check's or an agent's script), as paths inside ``root``; a
    new worktree gets those its commit lacks (untracked in the source). A word of a command that
    is no file of the workspace is no path, and nothing outside ``root`` is ever named."""
    config = peek_config(root)
    if config is None:
        return []  # the run says what is wrong with it
    hats = [config.hats.for_role(role) for role in Role]
    words = [
        config.prompt_file,
        *(hat.response_schema for hat in [*hats, *config.hats.work.values()]),
        *config.validate,
        *(word for gate in config.gates for word in gate.argv),
        *(word for agent in config.agents.values() for word in agent.command or ()),
    ]
    named = []
    for word in dict.fromkeys(w for w in words if w):
        path = root / word
        # A symlink is not followed: it could point the copy anywhere.
        inside = not path.is_symlink() and path.resolve().is_relative_to(root)
        if inside and path.is_file() and not word.startswith(("/", "-")):
            named.append(str(path.resolve().relative_to(root)))
    return named


def _carried(name: str) -> bool:
    """Whether a file of ralph's folder goes to a new worktree (not a run's own state)."""
    own = name in ("run.lock", "agent-group.json", "pipeline.db", "state.json", "event-log.jsonl")
    return not own and not (name.startswith("events-") and name.endswith(".jsonl"))
