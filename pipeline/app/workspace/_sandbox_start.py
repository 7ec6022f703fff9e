"""Where a run's agents and git will run, settled as the run (new or resumed) starts (I/O)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.core.config import RalphConfig
from pipeline.events import SandboxMode
from pipeline.handlers.runtime import (
    SandboxChoice,
    WorkspaceLayout,
    choose_sandbox,
    cut_off,
    git_policy_in,
    switch_branch,
)

__all__ = ["settle_sandbox"]


def _cut_off(sandboxing: SandboxChoice) -> list[str]:
    """A warning for each agent CLI the sandbox cuts off from everything, its model too."""
    found = []
    for name, needs in sandboxing.agents.items():
        why = cut_off(sandboxing.policy, needs)
        if why is not None:
            found.append(
                f"sandbox: agents.{name} ({needs.preset}) can reach nothing in the sandbox "
                f"({why}), so its CLI cannot reach its model: every invocation of it will fail"
            )
    return found


def settle_sandbox(
    config: RalphConfig,
    layout: WorkspaceLayout,
    stores: tuple[Path, ...],
    on_warning: Callable[[str], None] | None,
) -> SandboxChoice:
    """The sandbox a run of ``config`` runs in (``on_warning`` told when ``auto`` leaves it
    off, and of each agent CLI it cuts off from its model), with the workspace switched to
    the run's ``branch`` in it: a post-checkout hook is the repository's code. Raises
    :class:`~pipeline.handlers.runtime.SandboxUnavailableError` as :func:`choose_sandbox`
    does, and ``GitError`` when the switch fails."""
    sandboxing = choose_sandbox(config)
    if on_warning is not None:
        if sandboxing.probe is None and sandboxing.policy.mode is SandboxMode.AUTO:
            on_warning(f"sandbox: {sandboxing.said}")
        for problem in () if sandboxing.probe is None else _cut_off(sandboxing):
            on_warning(problem)
    if config.branch is not None:
        switch_branch(layout.root, config.branch, git_policy_in(sandboxing, layout, config, stores))
    return sandboxing
