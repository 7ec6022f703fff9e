"""Run every check CI runs, in order, and fail on the first failure.

ruff (lint and format), mypy --strict on pipeline/, import-linter, the agent CLIs at their
pinned versions (installed once into a cache, for the tests against the real tools), then
pytest. Run it from the repository root with the development extra installed:
``python scripts/check.py``. Without npm the CLIs are not installed and their tests skip,
except under CI, where that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent

CHECKS: list[tuple[str, list[str]]] = [
    ("ruff check", [str(BIN / "ruff"), "check", "."]),
    ("ruff format", [str(BIN / "ruff"), "format", "--check", "."]),
    ("mypy --strict", [sys.executable, "-m", "mypy"]),
    ("import contracts", [str(BIN / "lint-imports")]),
    ("agent CLIs", [sys.executable, "-m", "tests.agent_clis", "install"]),
    # worksteal: a worker that runs out takes tests from the other, so a long test near
    # the end does not leave one core idle.
    (
        "pytest",
        [
            sys.executable,
            "-m",
            "pytest",
            "-n",
            "2",
            "--dist",
            "worksteal",
            "-p",
            "no:cacheprovider",
        ],
    ),
]


def main() -> int:
    """Run the checks; return the exit status of the first that fails, else 0."""
    env = {**os.environ}
    if os.environ.get("CI"):
        env.setdefault("HYPOTHESIS_PROFILE", "ci")
    for name, command in CHECKS:
        if name == "agent CLIs" and shutil.which("npm") is None and not os.environ.get("CI"):
            print("==> agent CLIs: no npm here; the tests with the real CLIs will skip", flush=True)
            continue
        print(f"==> {name}: {' '.join(command)}", flush=True)
        status = subprocess.run(command, cwd=ROOT, env=env, check=False).returncode
        if status != 0:
            print(f"==> {name} FAILED (exit {status})", flush=True)
            return status
    print("==> all checks passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
