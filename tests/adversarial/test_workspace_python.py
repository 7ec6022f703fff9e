"""``ralph doctor`` and ``ralph init`` ask the validate command's Python whether its test
module is installed, outside the sandbox: no file an agent left in the workspace runs then.
A real Python in a real subprocess, a workspace holding the modules that ``importlib.util``
loads."""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.app.workspace import missing_module

PLANTED = ("contextlib", "warnings", "types", "functools", "importlib_metadata")


def test_asking_an_outside_python_for_the_test_module_runs_no_workspace_file(
    tmp_path: Path,
) -> None:
    """A Python outside the workspace started without its site hooks (so ``contextlib`` and
    ``warnings`` are not loaded yet when ``importlib.util`` asks for them): the workspace's
    planted modules of those names never run, and the answer (pytest missing) still comes."""
    root = tmp_path / "ws"
    root.mkdir()
    mark = tmp_path / "ran"
    for name in PLANTED:
        (root / f"{name}.py").write_text(f"open({str(mark)!r}, 'a').write({name!r} + '\\n')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python = bin_dir / "python3"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} -S "$@"\n')
    python.chmod(0o755)
    found = missing_module([str(python), "-m", "pytest"], root, {"PATH": str(bin_dir)})
    assert not mark.exists(), f"ran in the workspace: {mark.read_text()}"
    assert found == "pytest"  # -S: no site-packages, so no pytest
