"""The import-linter contracts hold, and they bite when a pure layer imports I/O."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    """A scratch copy of the package and its contracts, safe to break."""
    shutil.copytree(
        ROOT / "pipeline", tmp_path / "pipeline", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.slow
def test_contracts_are_kept(tree_copy: Path) -> None:
    """Both contracts pass on the code as it is."""
    result = _lint(tree_copy)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_a_reducer_importing_time_breaks_the_purity_contract(tree_copy: Path) -> None:
    """The forbidden contract names the offending import of a stdlib I/O module."""
    module = tree_copy / "pipeline" / "reducers" / "misc.py"
    module.write_text("import time\n" + module.read_text())
    result = _lint(tree_copy)
    assert result.returncode == 1
    assert "pipeline.reducers is not allowed to import time" in result.stdout


@pytest.mark.slow
def test_a_reducer_importing_a_handler_breaks_the_layers(tree_copy: Path) -> None:
    """The layers contract rejects an upward import from reducers into handlers."""
    module = tree_copy / "pipeline" / "reducers" / "misc.py"
    module.write_text("import pipeline.handlers\n" + module.read_text())
    result = _lint(tree_copy)
    assert result.returncode == 1
    assert "BROKEN" in result.stdout


@pytest.mark.slow
def test_the_screen_reading_files_breaks_the_purity_contract(tree_copy: Path) -> None:
    """``pipeline.core.screening`` is inside the forbidden contract: it works on texts it is given,
    and an ``import os`` there (to read the work tree itself) is named."""
    module = tree_copy / "pipeline" / "core" / "screening" / "_screen.py"
    module.write_text("import os\n" + module.read_text())
    result = _lint(tree_copy)
    assert result.returncode == 1
    assert "pipeline.core.screening._screen -> os" in result.stdout


@pytest.mark.slow
def test_the_sandbox_running_bwrap_breaks_the_purity_contract(tree_copy: Path) -> None:
    """``pipeline.core.sandbox`` is inside the forbidden contract: it builds bwrap's arguments, and
    an ``import subprocess`` there (to run bwrap itself) is named."""
    module = tree_copy / "pipeline" / "core" / "sandbox" / "_plan.py"
    module.write_text("import subprocess\n" + module.read_text())
    result = _lint(tree_copy)
    assert result.returncode == 1
    assert "pipeline.core.sandbox._plan -> subprocess" in result.stdout
