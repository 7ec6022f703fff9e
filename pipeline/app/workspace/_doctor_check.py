"""What a ``ralph doctor`` check reports, and how the checks run a program (I/O: starts
subprocesses).

Kept apart from the checks so that the workspace's checks (``_doctor``) and the agents'
(``_doctor_agents``) share one record without importing each other.
"""

from __future__ import annotations

import enum
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import final

from attrs import frozen

__all__ = ["Check", "Runner", "Status", "fail", "ok", "run_command", "warn"]


class Status(enum.Enum):
    """How a check came out."""

    OK = "OK"
    WARN = "WARN"
    """A run would go on, but something will not work as expected."""
    FAIL = "FAIL"
    """A run would fail, or could not start."""


@final
@frozen(kw_only=True)
class Check:
    """One thing checked: what, how it came out, what was found and how to fix it."""

    name: str
    status: Status
    detail: str
    fix: str = ""


def ok(name: str, detail: str, fix: str = "") -> Check:
    """A check that passed (``fix``: what would change it, where there is a choice)."""
    return Check(name=name, status=Status.OK, detail=detail, fix=fix)


def warn(name: str, detail: str, fix: str) -> Check:
    """A check that warns: a run would go on, but not as expected."""
    return Check(name=name, status=Status.WARN, detail=detail, fix=fix)


def fail(name: str, detail: str, fix: str) -> Check:
    """A check that fails: a run would fail, or could not start."""
    return Check(name=name, status=Status.FAIL, detail=detail, fix=fix)


Runner = Callable[[Sequence[str], Path, Mapping[str, str], float], tuple[int, str]]
"""Runs argv in a folder with an environment and a timeout: (exit status, output); raises
``OSError`` when it cannot start and ``subprocess.TimeoutExpired`` when it overruns."""


def run_command(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> tuple[int, str]:
    """The default :data:`Runner`: a real subprocess, stdin closed, output captured."""
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        check=False,
    )
    return done.returncode, (done.stdout + done.stderr).strip()
