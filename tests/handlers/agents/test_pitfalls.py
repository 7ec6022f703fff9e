"""Known pitfalls of configured agents: Claude Code's bypass mode as root is found, with its
fix, exactly when Claude Code itself would refuse to start."""

from __future__ import annotations

import pytest

from pipeline.core.config import AgentConfig
from pipeline.handlers.agents import known_pitfalls

BYPASS = AgentConfig(preset="claude", args=("--dangerously-skip-permissions",))


@pytest.mark.parametrize(
    "agent",
    [
        BYPASS,
        AgentConfig(preset="claude", args=("--allow-dangerously-skip-permissions",)),
        AgentConfig(preset="claude", args=("--permission-mode", "bypassPermissions")),
        AgentConfig(preset="claude", args=("--permission-mode=bypassPermissions",)),
        AgentConfig(command=("npx", "claude", "-p", "--dangerously-skip-permissions")),
    ],
)
def test_claude_bypass_as_root_without_a_sandbox_is_one_line_with_the_fix(
    agent: AgentConfig,
) -> None:
    """As root, Claude Code exits at once on any form of its bypass mode: the problem names
    the agent and both fixes (IS_SANDBOX in that agent's env, or a normal user)."""
    (problem,) = known_pitfalls("main", agent, {"PATH": "/bin"}, is_root=True)
    assert "\n" not in problem
    assert problem.startswith("agent 'main': ")
    assert '[agents.main] env = { IS_SANDBOX = "1" }' in problem
    assert "normal user" in problem


@pytest.mark.parametrize(
    ("agent", "environ", "is_root"),
    [
        (BYPASS, {}, False),
        (BYPASS, {"IS_SANDBOX": "1"}, True),
        (AgentConfig(preset="claude", args=BYPASS.args, env={"IS_SANDBOX": "1"}), {}, True),
        (BYPASS, {"CLAUDE_CODE_BUBBLEWRAP": "1"}, True),
        (AgentConfig(preset="claude"), {}, True),
        (AgentConfig(preset="codex"), {}, True),
        (AgentConfig(command=("my-agent", "--permission-mode", "acceptEdits")), {}, True),
    ],
)
def test_no_pitfall_where_claude_would_start(
    agent: AgentConfig, environ: dict[str, str], is_root: bool
) -> None:
    """A normal user, a sandbox said so (in ralph's environment or the agent's ``env``), the
    ``claude`` preset as it is (its permission flags work as root), other agents: nothing."""
    assert known_pitfalls("main", agent, environ, is_root) == ()


@pytest.mark.parametrize("value", ["0", "true", ""])
def test_only_is_sandbox_1_counts_as_a_sandbox(value: str) -> None:
    """Claude Code compares ``IS_SANDBOX`` with ``"1"`` exactly; so does the check."""
    assert len(known_pitfalls("main", BYPASS, {"IS_SANDBOX": value}, is_root=True)) == 1


def test_the_agents_own_env_overrides_ralphs() -> None:
    """``[agents.NAME] env`` is laid over ralph's environment, as the agent gets it."""
    agent = AgentConfig(preset="claude", args=BYPASS.args, env={"IS_SANDBOX": "0"})
    assert len(known_pitfalls("main", agent, {"IS_SANDBOX": "1"}, is_root=True)) == 1
