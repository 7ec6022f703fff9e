"""Programs ralph starts on the host, outside the sandbox, with a work tree an agent wrote
around them: ralph's own Python started again (``ralph mcp``'s ``start_run``, ``ralph
worker``'s pool) and ralph's own git. Real subprocesses, real files planted where an agent
can write them; each planted program writes a mark, which must never appear."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from pipeline.app.cli._mcp_control import _Control
from pipeline.app.cli._mcp_wire import ToolError
from pipeline.app.cli._queue import run_worker_processes
from tests.runtime.workspace import make_workspace

pytestmark = pytest.mark.slow


def _plant_package(folder: Path, mark: Path) -> None:
    """A ``pipeline`` package in ``folder`` (an agent's work tree) that marks it ran, then exits."""
    package = folder / "pipeline"
    package.mkdir(parents=True, exist_ok=True)
    code = f"import sys\nopen({str(mark)!r}, 'a').write('ran\\n')\nsys.exit(0)\n"
    for name in ("__init__.py", "__main__.py"):
        (package / name).write_text(code)


def test_mcp_start_run_runs_no_package_of_the_work_tree(tmp_path: Path) -> None:
    """``start_run`` starts ``python -m pipeline.app.cli run`` with the workspace as its
    folder: a ``pipeline`` package the agent left in the work tree is not the one imported."""
    root = make_workspace(tmp_path / "ws", scripts={}, agents={"main": ["true"]})
    mark = tmp_path / "ran"
    _plant_package(root, mark)
    control = _Control(root, None, str(root / ".ralph" / "events.db"), lambda text: text)
    try:
        # Whatever the run says (the planted package exits at once: "ralph run ended"), only
        # the mark matters.
        with contextlib.suppress(ToolError):
            control.start_run({"prompt": "Make the tests pass."})
    finally:
        _stop_runs(root)
    assert not mark.exists(), "the work tree's pipeline package ran on the host"


def _stop_runs(root: Path) -> None:
    """Stop a run started in ``root`` (by the pid its lock names), if any is still going."""
    from pipeline.app.workspace import read_lock

    try:
        pid = read_lock(root / ".ralph").get("pid")
    except OSError:
        return
    if isinstance(pid, int):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


def test_worker_pool_runs_no_package_of_the_folder_it_is_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ralph worker --concurrency N`` starts N ``python -m pipeline.app.cli worker``
    children in its own folder: started in a work tree, the agent's ``pipeline`` package
    there is not the one they import."""
    mark = tmp_path / "ran"
    _plant_package(tmp_path, mark)
    monkeypatch.chdir(tmp_path)
    run_worker_processes(1, "postgresql://127.0.0.1:1/none", ["--help"])
    assert not mark.exists(), "the folder's pipeline package ran on the host"
