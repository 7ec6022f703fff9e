"""Remotes for the remote tickets' tests: bare repositories in a test's folder, whose reflogs
list every push, and what their branches hold."""

from __future__ import annotations

from pathlib import Path

from tests.runtime.workspace import git
from tests.workers.support import queue_workspace


def bare_remote(tmp: Path) -> Path:
    """A bare repository ``tmp/remote.git`` that logs every ref update (so a test can tell a
    push that moved nothing), its ``main`` a :func:`queue_workspace`'s first commit."""
    remote = tmp / "remote.git"
    tmp.mkdir(parents=True, exist_ok=True)
    git(tmp, "init", "-q", "--bare", str(remote))
    git(remote, "config", "core.logAllRefUpdates", "always")
    git(remote, "symbolic-ref", "HEAD", "refs/heads/main")
    source = queue_workspace(tmp / "source", shell=True)
    git(source, "push", "-q", str(remote), "HEAD:refs/heads/main")
    return remote


def hook(remote: Path, name: str, script: str) -> None:
    """Install ``script`` (shell lines) as the remote's ``name`` hook (``pre-receive``,
    ``reference-transaction``, ...)."""
    path = remote / "hooks" / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def effects_on(remote: Path, branch: str) -> list[str]:
    """The ``Ralph-Effect`` trailers of the commits on ``branch`` of ``remote``, oldest first."""
    said = "%(trailers:key=Ralph-Effect,valueonly,separator=%x00)"
    out = git(remote, "log", "--reverse", f"--format={said}", f"refs/heads/{branch}")
    return [line for line in out.splitlines() if line]


def reflog(remote: Path, ref: str) -> list[str]:
    """Every update of ``ref`` on ``remote`` (its reflog's lines, oldest first)."""
    path = remote / "logs" / ref
    return path.read_text().splitlines() if path.exists() else []
