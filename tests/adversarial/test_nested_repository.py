"""A sandboxed agent that makes a git repository of its own inside its work tree, with a clean
filter in that repository's configuration: ralph's own git runs on the host, outside the
sandbox, and once the nested repository is a gitlink in ralph's index, every ``git add`` and
``git diff`` or ``git status`` of the work tree asked a ``git status`` inside it whether it was
dirty, which ran the agent's filter with the person's whole account. And the nested
repository stayed in the work tree after the run, a gitlink in its commits, so the person's own
later ``git status`` ran the filter."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pipeline.events import GitMetadataRestored
from tests.runtime.workspace import (
    gate,
    git,
    ralph,
    sandboxed_shell_workspace,
    stored_events,
)

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
needs_bwrap = pytest.mark.skipif(
    not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
)


@needs_bwrap
def test_a_nested_repositorys_filter_never_runs_on_the_host(tmp_path: Path) -> None:
    """The agent's first invocation makes ``nested/`` a repository whose configuration names a
    clean filter writing a file where only the host can (the sandbox's ``/tmp`` is private);
    each later one touches the filtered file so that git must read it again. ralph's commits,
    screens and pinned gates run no filter of it (before, the second commit's ``git add`` ran
    it on the host, as the person), and the run completes. (The git guard now removes the
    nested ``.git`` after each invocation, so each one makes it anew.)"""
    escaped = tmp_path / "escaped"
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    plant = f"""
if [ ! -d nested/.git ]; then
  mkdir -p nested && cd nested && env -u GIT_INDEX_FILE git init -q .
  echo one > f.txt && echo '* filter=evil' > .gitattributes
  env -u GIT_INDEX_FILE git add -A
  env -u GIT_INDEX_FILE git -c user.name=a -c user.email=a@example.org commit -qm one
  git config filter.evil.clean "sh -c 'id > {escaped}; cat'"
  cd ..
else
  touch nested/f.txt
fi
echo invoked >> invocations.txt
# Partial work at first: each development iteration is committed, and the run goes on.
[ "$(wc -l < invocations.txt)" -ge 4 ] || printf 'partial\nmore to do' > .agent/out/status
"""
    sandboxed_shell_workspace(
        root,
        script,
        plant,
        max_iterations=5,
        # A gate turns the tamper screen on: it reads the work tree with git too.
        extra=gate("ok", "true").replace("timeout_s", 'on = ["iteration"]\ntimeout_s'),
    )
    done = ralph("run", "--plain", cwd=root)
    assert (root / "nested" / "f.txt").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    assert len((root / "invocations.txt").read_text().splitlines()) >= 2, "it ran again"
    assert int(git(root, "rev-list", "--count", "HEAD")) >= 3, "two commits of the run"
    assert not escaped.exists(), escaped.read_text()
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@needs_bwrap
def test_a_repository_an_agent_makes_is_gone_after_its_invocation(tmp_path: Path) -> None:
    """The agent makes ``nested/`` a repository whose configuration names a clean filter, in
    a work tree whose base has a submodule: after the run no ``nested/.git`` is left, no
    commit holds a gitlink for it, the person's own ``git status`` runs no filter, the run
    records what it removed, and the submodule is as it was, its ``.git`` file put back after
    the agent pointed it at its own repository (before, ``nested/.git`` stayed and was
    committed as a gitlink)."""
    escaped = tmp_path / "escaped"
    origin = tmp_path / "origin"
    subprocess.run(["git", "init", "-q", str(origin)], check=True)
    (origin / "lib.txt").write_text("lib\n")
    git(origin, "add", "lib.txt")
    git(origin, "-c", "user.name=p", "-c", "user.email=p@example.org", "commit", "-qm", "lib")
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    plant = f"""
ls -d nested/.git >> seen.log 2>/dev/null
mkdir -p nested && cd nested && env -u GIT_INDEX_FILE git init -q .
echo one > f.txt && echo '* filter=evil' > .gitattributes
env -u GIT_INDEX_FILE git add -A
env -u GIT_INDEX_FILE git -c user.name=a -c user.email=a@example.org commit -qm one
git config filter.evil.clean "sh -c 'id > {escaped}; cat'"
cd ..
echo "gitdir: ../nested/.git" > sub/.git && echo repointed >> repointed.txt
echo invoked >> invocations.txt
"""
    sandboxed_shell_workspace(root, script, plant, max_iterations=2, retries=0)
    add = ("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "sub")
    git(root, *add)
    git(root, "commit", "-qm", "the person's submodule")
    sub_pointer = (root / "sub" / ".git").read_text()
    sub_head = git(root / "sub", "rev-parse", "HEAD")

    done = ralph("run", "--plain", cwd=root)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len((root / "invocations.txt").read_text().splitlines()) >= 2, "it ran again"
    assert (root / "seen.log").read_text() == ""  # no invocation found an earlier one's
    assert not os.path.lexists(root / "nested" / ".git")
    tree = git(root, "ls-tree", "-r", "HEAD")
    assert "160000 commit" not in tree.replace(f"160000 commit {sub_head}\tsub", ""), tree
    assert "nested/f.txt" in tree
    git(root, "status", "--porcelain")
    assert not escaped.exists(), escaped.read_text()
    removed = {
        p for e in stored_events(root) if isinstance(e, GitMetadataRestored) for p in e.paths
    }
    assert "nested/.git" in removed, removed
    assert (root / "repointed.txt").is_file()  # the submodule's pointer was the agent's to write
    assert (root / "sub" / ".git").read_text() == sub_pointer
    assert git(root / "sub", "rev-parse", "HEAD") == sub_head
    assert (root / "sub" / "lib.txt").read_text() == "lib\n"
