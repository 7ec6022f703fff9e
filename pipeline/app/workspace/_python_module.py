"""Whether the module of a ``python -m MODULE`` command is there for its Python, found before
a run starts and without running any code of the workspace (I/O: reads PATH and the disk,
runs a Python that lies outside the workspace).

``ralph init`` writes ``python3 -m pytest`` (or the project's ``.venv/bin/python -m pytest``)
for a repository whose tests use pytest. Without pytest installed for that Python, every final
check fails, and the run goes round until a breaker stops it. ``ralph doctor`` and ``ralph
init`` ask here.

An agent can write anything in the work tree, a ``.venv`` included, and ``ralph doctor`` runs
outside the sandbox with the person's rights: a Python in the workspace (by its path, by a
PATH entry there, or through a link into it) is never run. Its virtual environment's
``site-packages`` is looked at instead, by file names only; where that cannot tell (a
``.pth`` file, system site-packages, no ``pyvenv.cfg``), the module counts as there. A Python
outside the workspace is asked with ``importlib.util.find_spec`` for the top-level name only,
which locates a module without running it, from an empty folder (never the workspace, whose
files would come first on its import path).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from pipeline.app.workspace._doctor_check import Runner, run_command
from pipeline.app.workspace._programs import located

# Not through pipeline.handlers.sandbox, which loads the sandbox whole: `ralph init` asks too.
from pipeline.handlers._host_path import lies_in

__all__ = ["missing_module"]

_FIND: Final = (
    "import importlib.util, sys\n"
    "try:\n    found = importlib.util.find_spec(sys.argv[1]) is not None\n"
    "except (ImportError, ValueError):\n    found = False\n"
    "sys.exit(0 if found else 3)"
)
"""Run by the command's own Python (outside the workspace): exit 3 when the module is not
found."""
_MISSING: Final = 3
_TIMEOUT_S: Final = 10.0


def _in_its_venv(python: Path, top: str) -> bool:
    """Whether the workspace's Python ``python`` can import ``top``, as far as file names in
    its virtual environment tell (True where they cannot tell)."""
    if top in sys.stdlib_module_names:
        return True
    venv = python.parent.parent
    try:
        settings = (venv / "pyvenv.cfg").read_text("utf-8", errors="replace")
    except OSError:
        return True  # not a virtual environment ralph can read
    if "include-system-site-packages = true" in settings.replace("\t", " ").lower():
        return True
    for site in venv.glob("lib/python*/site-packages"):
        if any(site.glob("*.pth")):
            return True  # an editable install or a path hook: only running it would tell
        if (site / top).is_dir() or (site / f"{top}.py").is_file():
            return True
        if any(site.glob(f"{top}.*.so")) or any(site.glob(f"{top}.cpython-*")):
            return True
    return False


def missing_module(
    argv: Sequence[str], root: Path, environ: Mapping[str, str], run: Runner = run_command
) -> str | None:
    """The module of a ``python -m MODULE ...`` command in the workspace ``root`` that its
    Python cannot import (None: another kind of command, the program is not found, or the
    module is there)."""
    if len(argv) < 3 or argv[1] != "-m" or not Path(argv[0]).name.startswith("python"):
        return None
    module, root = argv[2], root.resolve()
    top = module.partition(".")[0]
    python = located(argv[0], root, environ.get("PATH"))
    if python is None or not python.is_file():
        return None  # missing_programs says so
    if (root / top).is_dir() or (root / f"{top}.py").is_file():
        return None  # the workspace's own module: ``-m`` puts the workspace first
    if lies_in(python, [root]):
        return None if _in_its_venv(python, top) else module
    try:
        # Asked from an empty folder of its own: ``-c`` puts the current folder first on the
        # import path, and the modules ``importlib.util`` loads (``contextlib``, ``warnings``)
        # would be the agent's own files in the workspace, run on the host.
        with tempfile.TemporaryDirectory(prefix="ralph-find-") as empty:
            status, _said = run([str(python), "-c", _FIND, top], Path(empty), environ, _TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return module if status == _MISSING else None
