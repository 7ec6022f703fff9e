"""``ralph run`` refuses, before any agent starts, an agent known to fail in this environment:
Claude Code asked to bypass its permission checks as root (containers, CI) exits at once, so
the run would only burn its retries and dev-fix passes. These tests need root."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pipeline.handlers.runtime import WorkspaceLayout
from tests.runtime.workspace import make_workspace, ralph

pytestmark = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root (Claude Code's check)"
)


def fake_claude(folder: Path) -> Path:
    """A ``claude`` that only records that it was started (and fails)."""
    folder.mkdir(parents=True)
    program = folder / "claude"
    marker = folder / "started"
    program.write_text(f"#!/bin/sh\necho started >> '{marker}'\nexit 1\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return marker


def claude_workspace(root: Path, agent_lines: str, hats: str = "") -> Path:
    return make_workspace(
        root,
        scripts={},
        agents={},
        extra=f'{hats}\n[agents.main]\npreset = "claude"\n{agent_lines}\n',
        budgets="max_retries_per_agent = 0\nbackoff_base_ms = 10\nbackoff_cap_ms = 20",
    )


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``claude`` first on PATH; no sandbox setting from the runner's environment."""
    started = fake_claude(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{started.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    monkeypatch.delenv("CLAUDE_CODE_BUBBLEWRAP", raising=False)
    return started


@pytest.mark.parametrize(
    ("agent_lines", "hats"),
    [
        ('args = ["--dangerously-skip-permissions"]', ""),
        ("", '[hats.reviewer]\nargs = ["--permission-mode", "bypassPermissions"]'),
    ],
    ids=["agent-args", "a-hats-args"],
)
def test_claude_bypass_as_root_is_one_clear_error_and_no_agent_starts(
    tmp_path: Path, marker: Path, agent_lines: str, hats: str
) -> None:
    """Exit 2 with one line naming the agent and the fix; no agent process, no run, no
    retries, nothing for ``ralph resume`` to repeat. A hat's arguments count too: the agent
    gets them when it works for that role."""
    root = claude_workspace(tmp_path / "ws", agent_lines, hats)
    result = ralph("run", "--plain", cwd=root)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(root / "ralph.toml") in lines[0]
    assert '[agents.main] env = { IS_SANDBOX = "1" }' in lines[0]
    assert not marker.exists()
    assert not (root / ".ralph" / "runs").exists()
    assert not WorkspaceLayout(root=root).store.exists()


@pytest.mark.parametrize(
    "agent_lines",
    ['args = ["--dangerously-skip-permissions"]\nenv = { IS_SANDBOX = "1" }', ""],
    ids=["bypass-in-a-sandbox", "the-preset"],
)
def test_claude_that_can_start_as_root_is_started(
    tmp_path: Path, marker: Path, agent_lines: str
) -> None:
    """With ``IS_SANDBOX = "1"`` in the agent's env, or the preset's own permission flags, the
    agent is started (the fake one then fails, which is not the check's business)."""
    root = claude_workspace(tmp_path / "ws", agent_lines)
    result = ralph("run", "--plain", cwd=root)
    assert "IS_SANDBOX" not in result.stderr
    assert marker.exists(), result.stdout + result.stderr
