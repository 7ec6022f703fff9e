"""Mount inputs for the examples: a workspace under ``$HOME`` as a handler would gather them."""

from __future__ import annotations

from typing import Any

import attrs

from pipeline.core.agents import PRESETS
from pipeline.core.sandbox import (
    Hidden,
    MountInputs,
    mount_plan,
    preset_paths,
)
from tests.sandbox.argv import Op, parse

SANDBOX_PRESETS = {name: preset.sandbox for name, preset in PRESETS.items()}

HOME = "/home/u"
W = "/home/u/src/app"


def workspace_inputs(workspace: str = W, home: str = HOME, **changes: Any) -> MountInputs:
    """A git workspace at ``workspace`` with the claude preset, ralph's venv under ``$HOME``,
    a planted ``~/.ssh`` and ``~/.netrc``, uid 1000 inside."""
    base = MountInputs(
        workspace=workspace,
        home=home,
        ralph_dir=f"{workspace}/.ralph",
        events_file=f"{workspace}/.ralph/events-r1.jsonl",
        marker_dir=f"{workspace}/.agent/tmp",
        config_file=f"{workspace}/ralph.toml",
        prompt_file=f"{workspace}/PROMPT.md",
        state_dir=f"{workspace}/.git/ralph",
        git_dir=f"{workspace}/.git",
        common_dir=f"{workspace}/.git",
        hidden=(
            Hidden(path=f"{home}/.ssh", is_dir=True),
            Hidden(path=f"{home}/.netrc", is_dir=False),
        ),
        interpreter_dirs=(f"{home}/.pyenv/versions/3.11.7", f"{home}/venvs/ralph"),
        path_entries=(f"{home}/venvs/ralph/bin", "/usr/local/bin", "/usr/bin"),
        preset=preset_paths(SANDBOX_PRESETS["claude"], {}, home),
        uid=1000,
    )
    return attrs.evolve(base, **changes)


def plan_ops(inputs: MountInputs) -> list[Op]:
    """The plan of ``inputs``, read back into flags."""
    return parse(mount_plan(inputs))
