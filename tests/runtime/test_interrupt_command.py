"""``ralph interrupt`` (and the Interrupt button of ``ralph serve``): the run in progress in a
workspace, stopped from another terminal as Ctrl-C in its own would stop it, then resumed to
the end; every refusal exits 2 and signals nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from pipeline.app.cli._serve_app import make_app
from pipeline.app.cli._serve_guard import Access
from pipeline.events import RunInterrupted
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import SqliteEventStore
from tests.runtime.workspace import (
    FINISH_EVERYTHING,
    make_workspace,
    ralph,
    scripted,
    start_ralph,
    wait_for,
)

SLOW_FIRST_DEVELOPER = """
set -e
mkdir -p .agent/out
if [ ! -e .ralph/developer-started ]; then
    : > .ralph/developer-started
    sleep 60
fi
printf 'completed\\ndone' > .agent/out/status
echo done >> work.txt
"""
"""A developer whose first invocation works for a minute (long enough to be interrupted)."""


def test_a_run_in_progress_is_interrupted_from_another_terminal_and_resumed(
    tmp_path: Path,
) -> None:
    root = make_workspace(
        tmp_path / "ws",
        scripts={"s.toml": FINISH_EVERYTHING},
        agents={"main": scripted("s.toml"), "dev": ["sh", "-c", SLOW_FIRST_DEVELOPER]},
        chains='default = ["main"]\ndeveloper = ["dev"]',
    )
    idle = ralph("interrupt", cwd=root)
    assert idle.returncode == 2
    assert "no run is in progress" in idle.stderr
    running = start_ralph("run", "--plain", cwd=root)
    try:
        started = root / ".ralph" / "developer-started"
        wait_for(started.exists, "the developer never started", alive=running)
        other = ralph("interrupt", "not-this-run", cwd=root)
        assert other.returncode == 2
        assert "run not-this-run is not in progress" in other.stderr
        asked = ralph("interrupt", cwd=root)
        assert asked.returncode == 0, asked.stderr
        assert "Asked run" in asked.stdout
        _out, err = running.communicate(timeout=30)
    finally:
        if running.poll() is None:
            running.kill()
    assert running.returncode == 130, err
    with SqliteEventStore(WorkspaceLayout(root=root).store) as store:
        (summary,) = store.runs()
        stops = [e for e in store.read(summary.run_id) if isinstance(e, RunInterrupted)]
    assert [e.reason for e in stops] == ["SIGINT"]
    resumed = ralph("resume", "--plain", cwd=root)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ralph("interrupt", cwd=root).returncode == 2


def test_the_pages_interrupt_button_is_refused_when_nothing_runs(tmp_path: Path) -> None:
    root = make_workspace(
        tmp_path / "ws", scripts={"s.toml": FINISH_EVERYTHING}, agents={"main": scripted("s.toml")}
    )
    assert ralph("run", cwd=root).returncode == 0
    store = WorkspaceLayout(root=root).store
    with SqliteEventStore(store) as opened:
        (summary,) = opened.runs()
    access = Access(secret="page-token-0123456789", remote=False)
    served = f"http://127.0.0.1:8765{access.root}"  # the address ralph serve prints
    client = TestClient(make_app(str(store), root, access), base_url=served)
    url = f"/runs/{summary.run_id}/interrupt"
    assert client.post(url).status_code == 403
    refused = client.post(url, data={"csrf": access.form_token})
    assert refused.status_code == 400
    assert "no run is in progress" in refused.text


def test_the_lock_is_read_without_taking_it(tmp_path: Path) -> None:
    """Queue workers' shared hold is refused with the way out; an exclusive hold by a process
    that is not ralph's gets no signal; while either is held, looking left the holder alone."""
    from pipeline.app.workspace import NotInterruptedError, interrupt_run
    from pipeline.app.workspace._lock import hold_workspace, lock_mode

    ralph_dir = WorkspaceLayout(root=tmp_path).ralph_dir
    assert lock_mode(ralph_dir) is None
    with hold_workspace(ralph_dir, shared=True):
        assert lock_mode(ralph_dir) == "shared"
        with pytest.raises(NotInterruptedError, match="queue workers run"):
            interrupt_run(tmp_path)
    assert lock_mode(ralph_dir) is None
    with hold_workspace(ralph_dir, "run-1"):
        assert lock_mode(ralph_dir) == "exclusive"
        with pytest.raises(NotInterruptedError, match="which is not a ralph process"):
            interrupt_run(tmp_path)
    with pytest.raises(NotInterruptedError, match="no run is in progress"):
        interrupt_run(tmp_path)
