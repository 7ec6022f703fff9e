"""Where a run's agents and git will run, settled as the run (new or resumed) starts (I/O)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.config import RalphConfig
from pipeline.events import SandboxMode
from pipeline.handlers.runtime import (
    SandboxChoice,
    WorkspaceLayout,
    choose_sandbox,
    git_policy_in,
    switch_branch,
)

__all__ = ["settle_sandbox"]


def settle_sandbox(
    config: RalphConfig,
    layout: WorkspaceLayout,
    stores: tuple[Path, ...],
    on_warning: Callable[[str], None] | None,
) -> SandboxChoice:
    """The sandbox a run of ``config`` runs in (``on_warning`` told when ``auto`` leaves it
    off), with the workspace switched to the run's ``branch`` in it: a post-checkout hook is
    the repository's code. Raises :class:`~pipeline.handlers.runtime.SandboxUnavailableError`
    as :func:`choose_sandbox` does, and ``GitError`` when the switch fails."""
    sandboxing = choose_sandbox(config, layout.root)
    said_off = sandboxing.probe is None and sandboxing.policy.mode is SandboxMode.AUTO
    if on_warning is not None and said_off:
        on_warning(f"sandbox: {sandboxing.said}")
    if config.branch is not None:
        switch_branch(layout.root, config.branch, git_policy_in(sandboxing, layout, config, stores))
    return sandboxing
