"""Fixtures the command-line tests share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo run (``ralph demo run``) for the whole session, shared by every test that reads
    its workspace, store or output (``stdout.txt`` beside it); a test that changes any of
    them changes a copy."""
    base = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120"}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline.app.cli", "demo", "run"],
        cwd=base,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    (base / "stdout.txt").write_text(result.stdout)
    return base / "run"
