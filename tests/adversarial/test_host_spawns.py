"""Programs ralph starts on the host, outside the sandbox, with a work tree an agent wrote
around them: ralph's own Python started again (``ralph mcp``'s ``start_run``, ``ralph
worker``'s pool), and the programs found on a ``PATH`` that names a work-tree folder (ralph's
own git, bubblewrap for the next run's sandbox, ``ralph doctor``'s git, bwrap and preset CLI).
Real subprocesses, real bubblewrap where the sandbox is the guard, real files planted where an
agent can write them; each planted program writes a mark, which must never appear."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from pathlib import Path

import pytest

from pipeline.app.cli._mcp_control import _Control
from pipeline.app.cli._mcp_wire import ToolError
from pipeline.app.cli._queue import run_worker_processes
from pipeline.app.workspace import Status, diagnose
from tests.runtime.workspace import SHELL_REPORTS, git, make_workspace, ralph

ONE_PASS = "max_iterations = 2\nmax_review_passes = 0\nmax_retries_per_agent = 0"

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


HAS_BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)

PLANT_PROGRAM = """
mkdir -p .venv/bin
printf '#!/bin/sh\\necho "{name} $*" >> {mark}\\nexec {real} "$@"\\n' > .venv/bin/{name}
chmod +x .venv/bin/{name}
"""
"""Shell lines planting, in the work tree's ``.venv/bin``, a program ``{name}`` that notes each
start in ``{mark}`` (outside the work tree: a sandboxed start cannot write there), then runs
the real one, ``{real}``."""


def _planting(mark: Path, *names: str) -> str:
    """The shell lines planting each of ``names`` (:data:`PLANT_PROGRAM`)."""
    found = {name: shutil.which(name) or f"/usr/bin/{name}" for name in names}
    return "".join(
        PLANT_PROGRAM.format(name=name, mark=mark, real=real) for name, real in found.items()
    )


@pytest.mark.parametrize(
    "sandbox", [pytest.param('mode = "required"', marks=needs_bwrap)], ids=["bwrap"]
)
def test_programs_planted_on_a_path_entry_in_the_work_tree_never_run_on_the_host(
    tmp_path: Path, sandbox: str
) -> None:
    """The person's ``PATH`` names a folder of the work tree (an activated ``.venv``, a
    direnv layout): a ``git`` and a ``bwrap`` a sandboxed agent plants there run neither as
    ralph's own git (its commits, the screen) nor as the sandbox of the next run."""
    mark = tmp_path / "ran-on-host"
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n" + _planting(mark, "git", "bwrap") + SHELL_REPORTS)
    script.chmod(0o755)
    make_workspace(
        root, scripts={}, agents={"main": [str(script)]}, budgets=ONE_PASS, sandbox=sandbox
    )
    (root / ".gitignore").write_text(".venv/\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "--quiet", "-m", "the venv is not tracked")
    path = f"{root / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"

    first = ralph("run", "--plain", cwd=root, env={"PATH": path})
    second = ralph("run", "--plain", cwd=root, env={"PATH": path})

    assert (root / ".venv" / "bin" / "git").exists(), first.stdout + first.stderr
    assert not mark.exists(), f"ran on the host: {mark.read_text()[:500]}"
    assert first.returncode == 0, first.stdout + first.stderr
    assert second.returncode == 0, second.stdout + second.stderr


def test_doctor_runs_no_program_planted_on_a_path_entry_in_the_work_tree(tmp_path: Path) -> None:
    """``ralph doctor`` with the person's ``PATH`` naming a folder of the work tree: the
    ``git``, ``bwrap`` and preset CLI (``codex``) an agent planted there never run on the
    host (its git checks, its sandbox probe, its version query), and git is still found."""
    mark = tmp_path / "ran-on-host"
    root = make_workspace(
        tmp_path / "ws", scripts={}, agents={"main": ["true"]}, sandbox='mode = "required"'
    )
    with (root / "ralph.toml").open("a") as config:
        config.write('\n[agents.codex]\npreset = "codex"\n')
    planted = root / ".venv" / "bin"
    planted.mkdir(parents=True)
    for name in ("git", "bwrap", "codex"):
        program = planted / name
        real = shutil.which(name) or "/bin/true"
        program.write_text(f'#!/bin/sh\necho "{name} $*" >> {mark}\nexec {real} "$@"\n')
        program.chmod(0o755)
    environ = {**os.environ, "PATH": f"{planted}{os.pathsep}{os.environ['PATH']}"}

    checks = diagnose(root, environ)

    assert not mark.exists(), f"ran on the host: {mark.read_text()[:500]}"
    by_name = {check.name: check for check in checks}
    assert by_name["repository"].status is Status.OK, by_name["repository"]
