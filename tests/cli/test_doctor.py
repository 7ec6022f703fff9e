"""``ralph doctor`` as a real subprocess in real git repositories: a healthy workspace exits
0, each thing a run would fail on exits 1 naming it and its fix, bad usage exits 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.runtime.workspace import ROOT, make_workspace, scripted

pytestmark = pytest.mark.slow  # whole runs in subprocesses: seconds a test

RALPH = [sys.executable, "-m", "pipeline.app.cli"]


def doctor(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ralph doctor ARGS`` in ``cwd``, git looking no further up than ``cwd``'s parent."""
    env = {
        **os.environ,
        "COLUMNS": "200",
        "PYTHONPATH": str(ROOT),
        "GIT_CEILING_DIRECTORIES": str(cwd.parent),
    }
    env.pop("RALPH_STORE", None)
    return subprocess.run(
        [*RALPH, "doctor", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _healthy(tmp_path: Path) -> Path:
    return make_workspace(
        tmp_path / "ws", scripts={"s.toml": ""}, agents={"main": scripted("s.toml")}
    )


def _json(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    document = orjson.loads(result.stdout)
    assert isinstance(document, dict)
    return document


def test_a_healthy_workspace_with_a_command_agent_is_ready(tmp_path: Path) -> None:
    """Git, config, prompt, .ralph/, the store and the agent all OK: exit 0."""
    root = _healthy(tmp_path)
    result = doctor("-C", str(root), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ready to run" in result.stdout
    assert "FAIL" not in result.stdout
    for name in ("git identity", "repository", "config", "prompt", ".ralph", "store", "agent main"):
        assert name in result.stdout


def test_a_missing_agent_program_fails_naming_the_program_and_the_fix(tmp_path: Path) -> None:
    """The only agent's program is nowhere on PATH: exit 1, its name and how to fix it."""
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": ["no-such-agent-cli"]})
    result = doctor("-C", str(root), cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "'no-such-agent-cli' not found on PATH" in result.stdout
    assert "install no-such-agent-cli" in result.stdout
    assert "a run would fail" in result.stdout


def test_a_folder_that_is_not_a_git_repository_fails(tmp_path: Path) -> None:
    """ralph.toml and a prompt, but no repository: exit 1, with git init as the fix."""
    root = _healthy(tmp_path)
    subprocess.run(["rm", "-rf", str(root / ".git")], check=True)
    checks = {
        c["name"]: c for c in _json(doctor("-C", str(root), "--json", cwd=tmp_path))["checks"]
    }
    assert checks["repository"]["status"] == "FAIL"
    assert "not a git repository" in checks["repository"]["detail"]
    assert checks["repository"]["fix"].startswith("git init")
    result = doctor("-C", str(root), cwd=tmp_path)
    assert result.returncode == 1


def test_a_store_that_cannot_be_reached_fails(tmp_path: Path) -> None:
    """A PostgreSQL URL no server answers, and a store URL of an unknown scheme: exit 1."""
    root = _healthy(tmp_path)
    unreachable = doctor(
        "-C", str(root), "--store", "postgresql://ralph@127.0.0.1:1/nowhere", cwd=tmp_path
    )
    assert unreachable.returncode == 1, unreachable.stdout + unreachable.stderr
    assert "127.0.0.1:1" in unreachable.stdout
    assert "cannot connect" in unreachable.stdout
    scheme = doctor("-C", str(root), "--store", "mysql://db/x", cwd=tmp_path)
    assert scheme.returncode == 1
    assert "unknown store scheme 'mysql'" in scheme.stdout


def test_json_output_lists_every_check_with_status_and_fix(tmp_path: Path) -> None:
    """``--json``: ``ok``, the workspace and one object per check (name, status, detail,
    fix); ``ok`` is false exactly when a check fails, and the exit status agrees."""
    root = _healthy(tmp_path)
    good = doctor("-C", str(root), "--json", cwd=tmp_path)
    document = _json(good)
    assert set(document) == {"ok", "workspace", "checks"}
    assert document["ok"] is True
    assert good.returncode == 0
    checks = document["checks"]
    assert isinstance(checks, list)
    assert checks
    for check in checks:
        assert set(check) == {"name", "status", "detail", "fix"}
        assert check["status"] in {"OK", "WARN", "FAIL"}
    (root / "PROMPT.md").unlink()
    bad = doctor("-C", str(root), "--json", cwd=tmp_path)
    document = _json(bad)
    assert document["ok"] is False
    assert bad.returncode == 1
    failed = [c for c in document["checks"] if c["status"] == "FAIL"]
    assert [c["name"] for c in failed] == ["prompt"]


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    """A workspace that is not a folder, or an unknown option: exit 2."""
    missing = doctor("-C", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert missing.returncode == 2
    assert "is not a directory" in missing.stderr
    assert doctor("--no-such-option", cwd=tmp_path).returncode == 2


def test_a_reachable_postgresql_store_is_ok(tmp_path: Path, postgres_url: str) -> None:
    """A running server: the store check says so with the server's version, exit 0."""
    root = _healthy(tmp_path)
    result = doctor("-C", str(root), "--store", postgres_url, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (store,) = [c for c in _json(result)["checks"] if c["name"] == "store"]
    assert store["status"] == "OK"
    assert "PostgreSQL" in store["detail"]


def test_the_final_check_is_looked_up_and_its_absence_warned(tmp_path: Path) -> None:
    """A ``validate`` program nowhere to be found fails (a run would refuse to start); no
    ``validate`` at all is a warning (any completion claim would be believed)."""
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": ""},
        agents={"main": scripted("s.toml")},
        extra='validate = ["ralph-test-no-such-check"]',
    )
    missing = doctor("-C", str(root), cwd=tmp_path)
    assert missing.returncode == 1, missing.stdout + missing.stderr
    assert "'ralph-test-no-such-check' not found" in missing.stdout
    unset = doctor("-C", str(_healthy(tmp_path / "plain")), cwd=tmp_path)
    assert unset.returncode == 0, unset.stdout + unset.stderr
    assert "no final check" in unset.stdout


def test_each_gate_program_is_listed_found_or_missing(tmp_path: Path) -> None:
    """A gate whose program is found is a row of its own; one whose program is missing fails
    the doctor (a run would refuse to start), naming the key and the program."""
    gates = (
        f'[[gates]]\nname = "here"\nargv = ["{sys.executable}", "-V"]\n'
        '[[gates]]\nname = "gone"\nargv = ["ralph-test-no-such-runner"]\n'
    )
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": ""}, agents={"main": scripted("s.toml")}, extra=gates
    )
    result = doctor("-C", str(root), "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    rows = {c["name"]: c for c in _json(result)["checks"]}
    assert rows["gate here"]["status"] == "OK"
    assert rows["gate gone"]["status"] == "FAIL"
    missing = "gates.1.argv: program 'ralph-test-no-such-runner' not found"
    assert missing in rows["gate gone"]["detail"]
