"""What a new user types first: ``--version``, ``-h``, ``python -m pipeline``, the demo's
closing hints run as printed in a shell without the virtual environment, brackets in help."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.test_cli import ralph

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

ROOT = Path(__file__).resolve().parents[2]


def test_version_and_short_help() -> None:
    """``--version`` prints the installed version; ``-h`` is ``--help``, on every command."""
    version = ralph("--version", cwd=ROOT)
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"ralph {importlib.metadata.version('ralph-pipeline')}"
    for args in (["-h"], ["run", "-h"], ["events", "-h"]):
        shown = ralph(*args, cwd=ROOT)
        assert shown.returncode == 0, shown.stderr
        assert "Usage:" in shown.stdout


def test_python_dash_m_pipeline_is_ralph() -> None:
    """``python -m pipeline`` works where the ``ralph`` script is not on PATH."""
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ralph ")


def test_help_keeps_the_brackets_of_config_tables_and_extras() -> None:
    """rich must not eat ``[store]`` and ``[otel]`` as markup."""
    env = {**os.environ, "COLUMNS": "300"}
    shown = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert "[store] url" in shown.stdout
    assert "ralph-pipeline[otel]" in shown.stdout


def test_the_demos_closing_hints_run_without_the_virtual_environment(
    demo_dir: Path,
) -> None:
    """The printed ``Replay it`` command works in a shell whose PATH has no ``ralph``."""
    printed = (demo_dir.parent / "stdout.txt").read_text().splitlines()
    (hint,) = [line.removeprefix("Replay it: ") for line in printed if line.startswith("Replay")]
    result = subprocess.run(
        ["sh", "-c", hint],
        env={"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, hint + result.stdout + result.stderr
    assert "verified" in result.stdout


def test_every_reading_command_takes_dash_c(demo_dir: Path, tmp_path: Path) -> None:
    """``replay``, ``events``, ``topics``, ``report`` and ``status`` read the store of the
    workspace ``-C`` names, from anywhere."""
    for args in (
        ["replay", "--verify"],
        ["events"],
        ["topics"],
        ["report", "--markdown", "-"],
        ["status"],
    ):
        result = ralph(*args, "-C", str(demo_dir), cwd=tmp_path)
        assert result.returncode == 0, (args, result.stderr)


def test_topics_filters_by_pattern(demo_dir: Path) -> None:
    """``--topic`` keeps the topics matching any of its patterns; a bad pattern is exit 2."""
    everything = ralph("topics", cwd=demo_dir).stdout.splitlines()
    reviews = ralph("topics", "--topic", "review.**", cwd=demo_dir).stdout.splitlines()
    assert reviews
    assert len(reviews) < len(everything)
    assert all(line.split()[2].startswith("review.") for line in reviews)
    bad = ralph("topics", "--topic", "a..b", cwd=demo_dir)
    assert bad.returncode == 2
    assert "--topic" in bad.stderr


def test_topics_filters_by_the_hat_that_published(demo_dir: Path) -> None:
    """Each entry names who it came from (the hat at work, or ralph for its notices); ``--hat``
    keeps exactly the entries of the hats named."""
    everything = ralph("topics", "--format", "jsonl", cwd=demo_dir).stdout.splitlines()
    entries = [json.loads(line) for line in everything]
    hats = {entry["hat"] for entry in entries}
    assert "ralph" in hats  # the demo's scope violation is reported by ralph
    assert len(hats - {"ralph", None}) >= 2  # and more than one hat published
    for hat in hats - {None}:
        kept = ralph("topics", "--format", "jsonl", "--hat", hat, cwd=demo_dir).stdout
        assert [json.loads(line) for line in kept.splitlines()] == [
            entry for entry in entries if entry["hat"] == hat
        ]
