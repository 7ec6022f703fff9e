"""Git remotes for the remote tickets' tests: bare repositories in a test's folder, reached by
a path or a ``file://`` URL (every remote test runs over both)."""

from __future__ import annotations

from pathlib import Path

from attrs import frozen

from tests.runtime.workspace import git
from tests.workers.support import queue_workspace

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


def bare_remote(tmp: Path, kind: str = "path") -> BareRemote:
    """``git init --bare`` at ``tmp/remote.git`` (its reflog lists every push) and a
    :func:`~tests.workers.support.queue_workspace` at ``tmp/clone`` whose ``main`` is pushed
    there, the remote named ``origin`` by its URL of ``kind``."""
    path = tmp / "remote.git"
    git(tmp, "init", "--quiet", "--bare", "--initial-branch=main", str(path))
    git(path, "config", "core.logAllRefUpdates", "always")
    remote = BareRemote(path=path, clone=queue_workspace(tmp / "clone"))
    git(remote.clone, "remote", "add", "origin", remote.url(kind))
    git(remote.clone, "push", "--quiet", "origin", "main")
    return remote
