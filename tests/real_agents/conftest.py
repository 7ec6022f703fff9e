"""Fixtures for tests against the real agent CLIs: the pinned CLI and a repository to fix.

A CLI comes from :mod:`tests.agent_clis`' cache (``scripts/check.py`` installs them
first). Where one is missing the test skips, saying how to install it; under CI it fails, so CI
never skips a real agent.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent_clis import PINS, installed


@pytest.fixture(scope="session")
def agent_cli() -> Callable[[str], Path]:
    """``agent_cli(name)``: the installed program of the pinned CLI ``name``."""

    def find(name: str) -> Path:
        program = installed(name)
        if program is None:
            reason = (
                f"{name} {PINS[name].version} is not installed: "
                f"python -m tests.agent_clis install {name}"
            )
            if os.environ.get("CI"):
                pytest.fail(reason)
            pytest.skip(reason)
        return program

    return find


@pytest.fixture
def own_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The runner's own Anthropic and Claude Code settings (a token, a sandbox flag) stay out."""
    for name in list(os.environ):
        if name.startswith(("ANTHROPIC_", "CLAUDE_")) or name == "IS_SANDBOX":
            monkeypatch.delenv(name)
