"""Git remotes for the remote tickets' tests: bare repositories in a test's folder, reached by
a path or a ``file://`` URL (every remote test runs over both), whose reflogs list every push,
and what their branches hold."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from tests.runtime.workspace import git
from tests.workers.support import SHELL_ITERATE, queue_workspace

URL_KINDS = ("path", "file")
"""How a test names its remote: an absolute path, or a ``file://`` URL."""


@frozen(kw_only=True)
class BareRemote:
    """A bare repository and a person's clone of it (``origin``), its ``main`` pushed."""

    path: Path
    clone: Path

    def url(self, kind: str) -> str:
        """The remote's URL of ``kind`` (one of :data:`URL_KINDS`)."""
        return str(self.path) if kind == "path" else self.path.as_uri()


def working(delay_s: float = 0.0) -> list[str]:
    """A shell agent that reports as :data:`~tests.workers.support.SHELL_ITERATE` does, adds
    a line to ``work.txt`` (so each development step has a commit to make) and then sleeps
    ``delay_s``."""
    lines = SHELL_ITERATE + 'echo "$$" >> work.txt\n' + (f"sleep {delay_s}\n" if delay_s else "")
    return ["sh", "-c", lines]


def bare_remote(
    tmp: Path, kind: str = "path", *, iterations: int = 1, agent: list[str] | None = None
) -> BareRemote:
    """``git init --bare`` at ``tmp/remote.git`` (its reflog lists every push) and a
    :func:`~tests.workers.support.queue_workspace` at ``tmp/clone`` (``iterations`` and
    ``agent`` passed on) whose ``main`` is pushed there, the remote named ``origin`` by its
    URL of ``kind``."""
    path = tmp / "remote.git"
    tmp.mkdir(parents=True, exist_ok=True)
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(path))
    git(path, "config", "core.logAllRefUpdates", "always")
    clone = queue_workspace(tmp / "clone", iterations=iterations, agent=agent)
    remote = BareRemote(path=path, clone=clone)
    git(remote.clone, "remote", "add", "origin", remote.url(kind))
    git(remote.clone, "push", "--quiet", "origin", "main")
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
