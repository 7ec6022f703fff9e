"""Known ways a configured agent CLI fails before it does any work (pure: the environment and
whether ralph runs as root are arguments).

Each pitfall is one line naming the agent, what will go wrong and how to fix it. The workspace
checks the agents its chains use before a run starts, so a run that could only fail (every
attempt, every retry, every dev-fix pass) ends at once with the fix instead.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Final

from pipeline.core.config import AgentConfig

__all__ = ["CLAUDE_BYPASS_FLAGS", "known_pitfalls"]

CLAUDE_BYPASS_FLAGS: Final = (
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
)
"""Claude Code's flags that turn its permission checks off; as root it refuses them."""


def _bypasses_permissions(argv: Iterable[str]) -> bool:
    """Whether Claude Code arguments ask for its bypass mode (which it refuses as root)."""
    args = tuple(argv)
    if any(arg in CLAUDE_BYPASS_FLAGS for arg in args):
        return True
    if "--permission-mode=bypassPermissions" in args:
        return True
    return any(
        arg == "--permission-mode" and value == "bypassPermissions"
        for arg, value in itertools.pairwise(args)
    )


def _claude_as_root(
    name: str, config: AgentConfig, environment: Mapping[str, str], is_root: bool
) -> str | None:
    # Claude Code's own test: root, and neither IS_SANDBOX=1 nor its bubblewrap sandbox.
    if not is_root or environment.get("IS_SANDBOX") == "1":
        return None
    if environment.get("CLAUDE_CODE_BUBBLEWRAP", "") not in ("", "0", "false"):
        return None
    if not _bypasses_permissions(config.invocation().argv):
        return None
    return (
        f"agent {name!r}: Claude Code refuses --dangerously-skip-permissions (bypassPermissions) "
        "as root and exits at once; in a sandbox (a container, CI) set "
        f'[agents.{name}] env = {{ IS_SANDBOX = "1" }}, or run ralph as a normal user, or drop '
        'that flag for the "claude" preset\'s (--permission-mode acceptEdits '
        "--allowedTools=Bash,Edit,Write,Read), which works as root"
    )


def known_pitfalls(
    name: str, config: AgentConfig, environ: Mapping[str, str], is_root: bool
) -> tuple[str, ...]:
    """The known problems agent ``name`` would hit if started now, each one line with its fix.

    ``environ`` is the environment ralph runs in (the agent gets it plus ``config.env``);
    ``is_root``: whether ralph runs as root (agents inherit its user).
    """
    environment = {**environ, **config.env}
    found = (_claude_as_root(name, config, environment, is_root),)
    return tuple(problem for problem in found if problem is not None)
