"""The event store an agent deletes: the default store survives ``git clean -fdx``, and a store
removed under a run stops it with the store-error exit, never a summary of lost facts (real
``ralph`` processes, shell-script agents)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from pipeline.core.state import Phase
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import make_workspace, ralph

_FINISH = """
mkdir -p .agent/out
echo '1. do it' > .agent/out/plan.md
printf 'completed\\ndone\\n' > .agent/out/status
: > .agent/out/issues.md
echo 'Do it' > .agent/out/commit-message
echo done > work.txt
"""


def _agent(tmp_path: Path, first_time: str) -> Path:
    """A shell agent (kept outside the repository) that runs ``first_time`` on its first
    invocation, then reports success for every role."""
    script = tmp_path / "agent.sh"
    mark = tmp_path / "agent.ran"
    script.write_text(
        f"#!/bin/sh\nif [ ! -e '{mark}' ]; then\n  : > '{mark}'\n  {first_time}\nfi\n{_FINISH}"
    )
    script.chmod(0o755)
    return script


def test_the_default_store_survives_git_clean_by_the_agent(tmp_path: Path) -> None:
    """The agent runs ``git clean -fdx`` mid-run (``.ralph/`` is only git-excluded): the run
    goes on and completes, its whole log is in the default store afterwards, and the prompts
    after the clean still carry the person's task (the run's saved prompt is kept in the git
    directory too)."""
    seen = tmp_path / "prompts-after-clean.txt"
    agent = _agent(tmp_path, "git clean -fdxq")
    with agent.open("a") as script:  # the first prompt went with the clean
        script.write(f"cat \"$RALPH_PROMPT_FILE\" >> '{seen}' 2>/dev/null || true\n")
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": [str(agent)]})
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert "Make the tests pass." in seen.read_text()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Exit status 0: completed" in result.stdout
    store = WorkspaceLayout(root=root).store
    assert ".git" in store.parts
    with SqliteEventStore(store) as opened:
        (run,) = opened.runs()
        assert f"({run.events} events)" in result.stdout
    status = ralph("status", "--json", cwd=root)
    assert status.returncode == 0, status.stderr
    assert f'"{Phase.COMPLETE.value}"' in status.stdout


def test_a_given_store_removed_by_the_agent_stops_the_run(tmp_path: Path) -> None:
    """``--store PATH`` deleted by the agent mid-run: a non-zero store-error exit naming the
    removed store, and no "N events" summary of facts that went to a deleted file."""
    db = tmp_path / "elsewhere" / "events.db"
    agent = _agent(tmp_path, f"rm -f '{db}'")
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": [str(agent)]})
    result = ralph("run", "--plain", "--store", str(db), cwd=root, timeout=300)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "was removed" in result.stderr
    assert str(db) in result.stderr
    assert " events)" not in result.stdout
    assert "Exit status 0" not in result.stdout
    assert "Traceback" not in result.stderr


def test_a_legacy_store_in_dot_ralph_is_still_the_default(tmp_path: Path) -> None:
    """A workspace whose store is the old ``.ralph/pipeline.db`` keeps using it."""
    agent = _agent(tmp_path, "true")
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": [str(agent)]})
    legacy = root / ".ralph" / "pipeline.db"
    SqliteEventStore(legacy).close()
    assert WorkspaceLayout(root=root).store == legacy
    result = ralph("run", "--plain", cwd=root, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    with SqliteEventStore(legacy) as opened:
        assert len(opened.runs()) == 1
    assert not (root / ".git" / "ralph" / "pipeline.db").exists()
    subprocess.run(["git", "status"], cwd=root, check=True, capture_output=True)


def test_a_run_the_store_lost_is_named_at_resume(tmp_path: Path) -> None:
    """The store removed after a run ended: ``resume``, ``status`` and ``abandon`` say the
    store holds no record of the run this workspace started (store-error exit 4), not "no
    runs yet, start one"."""
    agent = _agent(tmp_path, "true")
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": [str(agent)]})
    assert ralph("run", "--plain", cwd=root, timeout=300).returncode == 0
    store = WorkspaceLayout(root=root).store
    with SqliteEventStore(store) as opened:
        (run,) = opened.runs()
    for path in store.parent.glob(store.name + "*"):
        path.unlink()
    for args in (["resume"], ["resume", run.run_id], ["status"], ["abandon", run.run_id]):
        result = ralph(*args, cwd=root)
        assert result.returncode == 4, (args, result.stdout, result.stderr)
        assert f"holds no record of run {run.run_id}" in result.stderr
        assert "Traceback" not in result.stderr
