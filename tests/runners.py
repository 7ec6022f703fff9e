"""The real test runners the collection check's tests drive: jest and vitest from the agent
CLIs' cache (:mod:`tests.agent_clis`, installed from the npm registry the first time,
offline after), ``go`` and ``cargo`` from the machine. Where one is missing the test skips,
saying how to get it; under CI it fails, so CI never skips a runner."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.agent_clis import InstallError, install


def _missing(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


def node_runner(name: str) -> Path:
    """The program of the pinned ``jest`` or ``vitest``, installed into the cache when it is not
    there yet."""
    if shutil.which("node") is None:
        _missing("node is not on PATH (install Node.js and npm)")
    try:
        return install(name)
    except InstallError as error:
        _missing(f"{name} could not be installed: {error}")
        raise  # unreachable: _missing never returns


def machine_program(name: str, package: str) -> str:
    """The absolute path of ``go`` or ``cargo`` on PATH (``package``: Debian's package)."""
    found = shutil.which(name)
    if found is None:
        _missing(f"{name} is not on PATH (apt-get install {package})")
        raise AssertionError  # unreachable: _missing never returns
    return found
