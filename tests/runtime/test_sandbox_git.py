"""The repository's own code that ralph's git runs (``[git] run_hooks``, ``run_filters``) runs
in the sandbox too: a hook in a work-tree ``core.hooksPath`` (as husky sets it) that the agent
rewrote, a hook run when the run switches to its branch, and a clean filter script the agent
edited, each denied the person's secrets and the world outside the workspace, while still
doing its work. Real ``ralph run``, real bubblewrap, real git."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from pipeline.events import TerminationReason
from tests.runtime.test_sandbox import (
    CANARY,
    KEY,
    REQUIRED,
    _environment,
    ended,
    hostile_workspace,
    planted_home,
    pytestmark,
    run_ralph,
)

__all__ = ["pytestmark"]  # slow, and skipped where bubblewrap is missing


def _probe_hook(outside: Path) -> str:
    """A hook that tries each escape and writes one verdict per try to hook-probes.txt."""
    return f"""#!/bin/sh
name=$(basename "$0")
try() {{
  what=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name $what"
  else echo "denied $name $what"; fi >> hook-probes.txt
}}
try ssh-key cat "$HOME/.ssh/id_ed25519"
try write-outside sh -c 'echo planted > {outside}/planted'
try git-config sh -c 'echo "# planted" >> .git/config'
try canary sh -c 'test -n "$SANDBOX_CANARY_TOKEN"'
"""


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


def test_hooks_from_a_work_tree_hooks_path_run_in_the_sandbox(tmp_path: Path) -> None:
    """``core.hooksPath = .githooks``: the person's post-checkout hook runs when the run
    switches to its branch, the post-commit hook the agent wrote runs in ralph's commit; both
    run, and both are denied every escape."""
    home = planted_home(tmp_path)
    outside = Path(tempfile.mkdtemp(dir="/var/tmp"))  # on the host, not under a hidden /tmp
    try:
        hook = _probe_hook(outside)
        # The agent plants its own hook where git will look for it.
        body = f"cat > .githooks/post-commit <<'EOF'\n{hook}EOF\nchmod +x .githooks/post-commit\n"
        extra = f'branch = "work"\n[git]\nrun_hooks = true\n{REQUIRED}'
        root = hostile_workspace(tmp_path, body, extra=extra)
        (root / ".githooks").mkdir()
        (root / ".githooks" / "post-checkout").write_text(hook)
        (root / ".githooks" / "post-checkout").chmod(0o755)
        _git(root, "add", ".githooks")
        _git(root, "commit", "--quiet", "-m", "The project's hooks")
        _git(root, "config", "core.hooksPath", ".githooks")
        config = (root / ".git" / "config").read_text()
        done = run_ralph("run", cwd=root, env=_environment(home))
        assert done.returncode == 0, done.stdout + done.stderr
        assert ended(root) is TerminationReason.COMPLETED
        verdicts = (root / "hook-probes.txt").read_text().splitlines()
        ran = {line.split()[1] for line in verdicts}
        assert ran == {"post-checkout", "post-commit"}, verdicts
        assert [v for v in verdicts if not v.startswith("denied ")] == []
        assert not (outside / "planted").exists()
        assert (root / ".git" / "config").read_text() == config
        assert _git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "work"
        history = _git(root, "log", "-p", "--all")
        for text in (history, done.stdout, done.stderr):
            assert KEY not in text
            assert CANARY not in text
    finally:
        subprocess.run(["rm", "-rf", str(outside)], check=False)


def test_a_filter_the_agent_edited_runs_in_the_sandbox_and_cannot_commit_a_secret(
    tmp_path: Path,
) -> None:
    """A clean filter's output is what gets committed: one that prints the planted key and
    the canary variable would put them into the repository's history. In the sandbox it reads
    neither, and still filters the file."""
    filter_script = (
        'cat "$HOME/.ssh/id_ed25519" 2>/dev/null\n'
        'echo "canary=${SANDBOX_CANARY_TOKEN:-none}"\n'
        "cat\n"
    )
    body = (
        f"mkdir -p .gitfilters\ncat > .gitfilters/clean.sh <<'EOF'\n{filter_script}EOF\n"
        "echo hello > notes.txt\n"
    )
    extra = f"[git]\nrun_filters = true\n{REQUIRED}"
    root = hostile_workspace(tmp_path, body, extra=extra)
    _git(root, "config", "filter.probe.clean", "sh .gitfilters/clean.sh")
    (root / ".gitattributes").write_text("notes.txt filter=probe\n")
    _git(root, "add", ".gitattributes")
    _git(root, "commit", "--quiet", "-m", "The project's filter")
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert ended(root) is TerminationReason.COMPLETED
    committed = _git(root, "show", "HEAD:notes.txt")
    assert committed == "canary=none\nhello\n"
    history = _git(root, "log", "-p", "--all")
    assert KEY not in history
    assert CANARY not in history


@pytest.mark.parametrize("runs_code", ["run_hooks", "run_filters"])
def test_signing_with_hooks_or_filters_in_the_sandbox_is_refused_before_the_run(
    tmp_path: Path, runs_code: str
) -> None:
    """The signing program needs the person's keys, which the sandbox hides from the hooks
    and filters ralph's git runs there: said before anything runs, with the ways out."""
    extra = f"[git]\nsign = true\n{runs_code} = true\n{REQUIRED}"
    root = hostile_workspace(tmp_path, "", extra=extra)
    done = run_ralph("run", cwd=root, env=_environment(planted_home(tmp_path)))
    assert done.returncode == 2, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert "[git] sign cannot be on together with run_hooks or run_filters" in said
    assert '[sandbox] mode = "off"' in said
    assert not (root / ".ralph" / "runs").exists() or not any((root / ".ralph").glob("events-*"))
