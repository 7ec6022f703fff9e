"""A sandboxed agent that plants a link where the sandbox binds a protected path onto itself
(``.vscode``, ``.idea``, a shell start-up file, ``[sandbox] protect``): bwrap follows a link
at both ends of a bind, so the next sandbox bound the link's target, read from the host, over
whatever the sandbox showed at the same place inside (an empty cover over a repository beside
the workspace, ralph's hidden state, a host socket)."""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runtime.workspace import (
    SHELL_REPORTS,
    claude_preset_workspace,
    make_workspace,
    ralph,
    sandboxed_shell_workspace,
)

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)

SECRET = "another-repositorys-secret"

_CONNECT = (
    "import socket\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect('../sockets/served')\n"
    "print(s.recv(100).decode())\n"
)
"""Connects to the host's socket by its own path and prints what it says."""


def _answer(server: socket.socket) -> None:
    """Say the secret to every connection, until the socket is closed."""
    with contextlib.suppress(OSError):
        while True:
            connection, _ = server.accept()
            with connection:
                connection.sendall(b"socket-" + SECRET.encode())


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder outside ``/tmp`` (the sandbox's ``/tmp`` is private, so a repository beside
    the workspace there would be out of reach anyway)."""
    folder = Path(tempfile.mkdtemp(dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@needs_bwrap
def test_a_link_at_a_protected_path_uncovers_nothing_the_sandbox_hides(outside_tmp: Path) -> None:
    """An agent links ``.vscode`` to a repository beside its own (hidden) and ``.idea`` to a
    unix socket the host serves (covered), then reads the one and connects to the other by
    their own paths in every later invocation: neither link is followed by a bind, so all it
    meets is the sandbox's covers (before, the second invocation read the other repository's
    file and was answered by the socket)."""
    other = outside_tmp / "other"
    (other / ".git").mkdir(parents=True)
    (other / "secret.txt").write_text(SECRET + "\n")
    root = outside_tmp / "ws"
    script = outside_tmp / "agent.sh"
    plant = (
        "[ -L .vscode ] || ln -s ../other .vscode\n"
        "[ -L .idea ] || ln -s ../sockets/served .idea\n"
        "cat ../other/secret.txt >> leaked.txt 2>/dev/null\n"
        f"{sys.executable} -I -c {shlex.quote(_CONNECT)} >> leaked.txt 2>/dev/null\n"
        "echo invoked >> invocations.txt\n"
    )
    script.write_text("#!/bin/sh\ncat > /dev/null\n" + SHELL_REPORTS + plant)
    script.chmod(0o755)
    (outside_tmp / "sockets").mkdir()
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(outside_tmp / "sockets" / "served"))
    server.listen(8)
    answering = threading.Thread(target=_answer, args=(server,), daemon=True)
    answering.start()
    budgets = "max_iterations = 2\nmax_review_passes = 0\nmax_retries_per_agent = 1"
    make_workspace(
        root,
        scripts={},
        agents={"main": [str(script)]},
        budgets=budgets,
        sandbox='mode = "required"',
    )
    try:
        done = ralph("run", "--plain", cwd=root)
    finally:
        server.close()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len((root / "invocations.txt").read_text().splitlines()) >= 2, "it ran again"
    leaked = (root / "leaked.txt").read_text() if (root / "leaked.txt").exists() else ""
    assert leaked == ""


@needs_bwrap
def test_a_link_in_a_worktree_uncovers_neither_the_main_tree_nor_its_stores(
    outside_tmp: Path,
) -> None:
    """An agent of a run in a worktree links ``.vscode`` to the main work tree (hidden: the
    person's own files, and the git folder where every run keeps its store), then reads the
    main tree's file and looks for stores through its own path: nothing of it shows (before,
    the second invocation read the main tree's file)."""
    root = outside_tmp / "ws"
    script = outside_tmp / "agent.sh"
    main = "../../ws"
    plant = (
        f"[ -L .vscode ] || ln -s {main} .vscode\n"
        f"cat {main}/README.md >> leaked.txt 2>/dev/null\n"
        f"find {main}/.git/ralph {main}/.git/worktrees/*/ralph -type f >> leaked.txt 2>&-\n"
        "echo invoked >> invocations.txt\n"
    )
    sandboxed_shell_workspace(root, script, plant, max_iterations=2)
    done = ralph("run", "--worktree", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (tree,) = (outside_tmp / "ws-worktrees").iterdir()
    assert len((tree / "invocations.txt").read_text().splitlines()) >= 2, "it ran again"
    leaked = (tree / "leaked.txt").read_text() if (tree / "leaked.txt").exists() else ""
    assert leaked == ""


@needs_bwrap
def test_a_link_in_the_clis_folder_uncovers_nothing_the_sandbox_hides(outside_tmp: Path) -> None:
    """An agent run by a preset (Claude Code's: a shell script named ``claude`` on ``PATH``)
    links ``commands`` in its CLI's writable folder (``~/.claude``, one of the entries the
    sandbox binds read-only on top) to a repository beside the workspace, then reads it
    through its own path: the link is not followed by a bind, so nothing shows (before, the
    second invocation read the other repository's file)."""
    other = outside_tmp / "other"
    (other / ".git").mkdir(parents=True)
    (other / "secret.txt").write_text(SECRET + "\n")
    home = outside_tmp / "home"
    (home / ".claude").mkdir(parents=True)
    plant = (
        '[ -L "$HOME/.claude/commands" ] || ln -s ../../other "$HOME/.claude/commands"\n'
        "cat ../other/secret.txt >> leaked.txt 2>/dev/null\n"
        "echo invoked >> invocations.txt\n"
    )
    root, env = claude_preset_workspace(outside_tmp, home, plant, max_iterations=2, retries=1)
    ralph("run", "--plain", cwd=root, env=env)
    # The script prints nothing a CLI would, so the run may fail: what matters is that the
    # agent ran again after planting the link.
    assert len((root / "invocations.txt").read_text().splitlines()) >= 2, "it ran again"
    leaked = (root / "leaked.txt").read_text() if (root / "leaked.txt").exists() else ""
    assert leaked == ""
