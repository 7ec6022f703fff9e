"""Hostile shell agents at the seams between ralph's surfaces: git's shared folders, linked
worktrees and other runs' stores. Real ``ralph run`` (and ``ralph run --worktree``) processes,
real bubblewrap, real git; each agent tries every way out and writes one verdict per try.

The promise held: an agent invocation writes its own work tree and its own run's events file,
and nothing else; ralph's git and the person's later git read only what ralph and the person
wrote (docs/architecture/sandbox.md, "The trust model").
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.events import GitMetadataRestored, RunCompleted, TerminationReason
from tests.runtime.workspace import SHELL_REPORTS, git, make_workspace, ralph, stored_events
from tests.support import init_repository

HAS_BWRAP = subprocess.run(["sh", "-c", "command -v bwrap"], capture_output=True).returncode == 0
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not HAS_BWRAP and not os.environ.get("CI"), reason="bubblewrap is not installed"
    ),
]

REQUIRED = 'mode = "required"'

PROBES = """
try() {{
  name=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name" >> .agent/probes.txt
  else echo "denied $name" >> .agent/probes.txt; fi
}}
mkdir -p .agent
: > .agent/probes.txt
gd=$(git rev-parse --path-format=absolute --git-dir)
common=$(git rev-parse --path-format=absolute --git-common-dir)
main=$(dirname "$common")
# A folder of the agent's making that looks like a git folder: the real objects and refs,
# and a config whose filter and fsmonitor write the marker wherever they run.
mkdir -p .evil
for part in objects refs logs HEAD packed-refs; do ln -sfn "$common/$part" ".evil/$part"; done
printf '[core]\\n\\trepositoryformatversion = 0\\n' > .evil/config
printf '\\tfsmonitor = "id > {marker}.fsmonitor; false"\\n' >> .evil/config
printf '[filter "pwn"]\\n\\tclean = "id > {marker}; cat"\\n' >> .evil/config
echo '*.txt filter=pwn' > .gitattributes
echo text > notes.txt
try commondir sh -c "echo '$PWD/.evil' > '$gd/commondir'"
try common-commondir sh -c "echo '$PWD/.evil' > '$common/commondir'"
try gitdir-pointer sh -c "test -f .git && echo 'gitdir: $PWD/.evil' > .git"
try ref-move git update-ref refs/heads/main HEAD~1
try ref-file sh -c "git rev-parse HEAD > '$common/refs/heads/evil'"
try object-write sh -c 'echo planted | git hash-object -w --stdin'
{own_git}try config-write sh -c "printf '[alias]\\n\\tx = !id\\n' >> '$common/config'"
try main-store test -r "$common/ralph/pipeline.db"
try other-stores sh -c "cat '$common'/worktrees/*/ralph/pipeline.db"
own=$(basename "$gd")
here=$(basename "$PWD")
try other-git-folders sh -c "ls -A '$common/worktrees' | grep -vx '$own' | grep -q ."
try worktrees-folder sh -c "ls -A '$main-worktrees' | grep -vx '$here' | grep -q ."
"""
"""Shell lines that try each seam and write ``ALLOWED name`` or ``denied name`` for each."""


def _workspace(tmp_path: Path, sandbox: str) -> tuple[Path, Path]:
    """A repository with two commits (so ``HEAD~1`` exists) whose one agent runs the probes
    and reports success; and the marker path the planted code would write."""
    marker = tmp_path / "pwned"
    root = tmp_path / "ws"
    script = tmp_path / "agent.sh"
    # With the sandbox off the agent's own ``git add`` would run its own filter, as the
    # person: that is no escape, and would hide whether ralph's git ran it.
    own_git = (
        "try index-write sh -c 'git add notes.txt'\n"
        "try restore sh -c 'rm second.md && git checkout HEAD -- second.md && test -f second.md'\n"
    )
    probes = PROBES.format(marker=marker, own_git=own_git if sandbox == REQUIRED else "")
    script.write_text("#!/bin/sh\n" + probes + SHELL_REPORTS)
    script.chmod(0o755)
    budgets = "max_iterations = 2\nmax_review_passes = 0\nmax_retries_per_agent = 0"
    agents = {"main": [str(script)]}
    make_workspace(root, scripts={}, agents=agents, budgets=budgets, sandbox=sandbox)
    (root / "second.md").write_text("a second commit\n")
    subprocess.run(["git", "add", "second.md"], cwd=root, check=True)
    subprocess.run(["git", "commit", "--quiet", "-m", "second"], cwd=root, check=True)
    return root, marker


def _verdicts(work_tree: Path) -> dict[str, str]:
    lines = (work_tree / ".agent" / "probes.txt").read_text().splitlines()
    return {name: verdict for verdict, name in (line.split(" ", 1) for line in lines)}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _completed(root: Path) -> TerminationReason:
    (completed,) = [e for e in stored_events(root) if isinstance(e, RunCompleted)]
    return completed.reason


def test_sandboxed_agents_reach_no_git_folder_no_other_run_and_no_host_code(
    tmp_path: Path,
) -> None:
    """Run A in a worktree, then run B in another worktree and run M in the main tree, each
    agent trying every seam: every try but restoring a file from git is denied (git's
    folders, refs, objects and config are read-only; each process writes only its own copy
    of the index; other runs' stores, git folders and worktrees are invisible), A's store is
    byte for byte as A left it, main and the refs are untouched, no planted code ran on the
    host, and each run completes."""
    root, marker = _workspace(tmp_path, REQUIRED)
    first = ralph("run", "--worktree", "--plain", cwd=root)
    assert first.returncode == 0, first.stdout + first.stderr
    (a_tree,) = (tmp_path / "ws-worktrees").iterdir()
    a_store = root / ".git" / "worktrees" / a_tree.name / "ralph" / "pipeline.db"
    a_before = _digest(a_store)
    main_before = git(root, "rev-parse", "refs/heads/main")

    second = ralph("run", "--worktree", "--plain", cwd=root)
    assert second.returncode == 0, second.stdout + second.stderr
    (b_tree,) = [p for p in (tmp_path / "ws-worktrees").iterdir() if p != a_tree]
    in_main = ralph("run", "--plain", cwd=root)
    assert in_main.returncode == 0, in_main.stdout + in_main.stderr

    for work_tree in (b_tree, root):
        verdicts = _verdicts(work_tree)
        assert len(verdicts) == 13, verdicts
        allowed = sorted(name for name, verdict in verdicts.items() if verdict == "ALLOWED")
        # Restoring a file from git works: each process has its own copy of the index.
        assert allowed == ["restore"], (work_tree, allowed)
    assert _completed(root) is TerminationReason.COMPLETED
    assert _digest(a_store) == a_before
    assert git(root, "rev-parse", "refs/heads/main") != main_before  # the main run's commit
    assert git(root, "rev-parse", "refs/heads/main~1") == main_before
    assert "refs/heads/evil" not in git(root, "for-each-ref", "--format=%(refname)")
    assert not (root / ".git" / "commondir").exists()
    assert (b_tree / ".git").read_text().startswith("gitdir: ")
    assert ".evil" not in (b_tree / ".git").read_text()
    git(root, "status")  # the person's git afterwards: runs nothing of the agent's
    git(b_tree, "status")
    assert not marker.exists()
    assert not Path(f"{marker}.fsmonitor").exists()


def test_with_the_sandbox_off_a_commondir_redirect_never_reaches_ralphs_git_or_the_persons(
    tmp_path: Path,
) -> None:
    """With the sandbox off the agent can write ``.git/commondir`` (pointing git at a folder
    of its making, whose config defines a filter and an fsmonitor): ralph's git is told its
    folders explicitly and never runs them, the redirect is removed after the invocation and
    recorded, and the person's ``git status`` afterwards runs nothing of the agent's."""
    root, marker = _workspace(tmp_path, 'mode = "off"')
    done = ralph("run", "--plain", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _verdicts(root)["commondir"] == "ALLOWED"  # no sandbox: the write itself happens
    assert not marker.exists()
    assert not (root / ".git" / "commondir").exists()
    restored = [e for e in stored_events(root) if isinstance(e, GitMetadataRestored)]
    assert any(".git/commondir" in e.paths for e in restored), restored
    git(root, "status")
    assert not Path(f"{marker}.fsmonitor").exists()
    assert _completed(root) is TerminationReason.COMPLETED


CREDENTIAL_PROBES = """
try() {{
  name=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name" >> .agent/probes.txt
  else echo "denied $name" >> .agent/probes.txt; fi
}}
mkdir -p .agent
: > .agent/probes.txt
try cache-listed sh -c 'ls -A ../remote-x.git | grep -q .'
try cache-log git -C ../remote-x.git log --all
try cache-ls-remote git ls-remote {remote}
try cache-ls-remote-url git ls-remote file://{remote}
try other-ticket cat ../t-other/other.txt
try git-credentials cat "$HOME/.git-credentials"
try xdg-credentials cat "$HOME/.config/git/credentials"
try environment sh -c 'env | grep -i -e token -e ssh_auth'
try identity git config user.name
"""
"""Shell lines of an agent in a ticket's folder reaching for the worker's bare cache beside
it, another ticket's folder, the credential files and the variables that hold secrets."""


def test_an_agent_beside_a_bare_cache_reaches_no_other_branch_and_no_credential(
    tmp_path: Path,
) -> None:
    """A sandboxed agent in a ticket's folder, beside a worker's bare cache and another
    ticket's repository (outside ``/tmp``, whose siblings the root shows read-only), can
    neither list, log nor ``ls-remote`` the cache, nor read the other ticket, the credential
    files or the token and agent-socket variables, while git's identity still reads; and the
    run completes."""
    workdir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        remote = workdir / "remote-x.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
        other = init_repository(workdir / "t-other")
        (other / "other.txt").write_text("another ticket's work\n")
        home = tmp_path / "home"
        (home / ".config" / "git").mkdir(parents=True)
        (home / ".gitconfig").write_text("[user]\n\tname = person\n\temail = p@example.com\n")
        for secret in (home / ".git-credentials", home / ".config" / "git" / "credentials"):
            secret.write_text("https://bob:hunter2@git.example.com\n")
        root = workdir / "t-one"
        script = tmp_path / "agent.sh"
        script.write_text("#!/bin/sh\n" + CREDENTIAL_PROBES.format(remote=remote) + SHELL_REPORTS)
        script.chmod(0o755)
        budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 0"
        make_workspace(
            root, scripts={}, agents={"main": [str(script)]}, budgets=budgets, sandbox=REQUIRED
        )
        git(root, "push", "--quiet", str(remote), "main:refs/heads/main")
        env = {"HOME": str(home), "GITHUB_TOKEN": "ghp_secret", "SSH_AUTH_SOCK": "/x/agent.sock"}
        done = ralph("run", "--plain", cwd=root, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        verdicts = _verdicts(root)
        allowed = sorted(name for name, verdict in verdicts.items() if verdict == "ALLOWED")
        assert len(verdicts) == 9, verdicts
        assert allowed == ["identity"], allowed
        assert _completed(root) is TerminationReason.COMPLETED
    finally:
        shutil.rmtree(workdir)


WORKDIR_PROBES = """
if [ ! -e .agent/probes.txt ]; then
try() {{
  name=$1; shift
  if ( "$@" ) >/dev/null 2>&1; then echo "ALLOWED $name" >> .agent/probes.txt
  else echo "denied $name" >> .agent/probes.txt; fi
}}
mkdir -p .agent
: > .agent/probes.txt
: > .agent/started
i=0
while [ ! -e .agent/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
try workdir-listed sh -c 'ls -A .. | grep -vx "${{PWD##*/}}" | grep -q .'
try cache-lock sh -c 'flock -n "$(ls -d ../remote-*.lock | head -n 1)" true'
try late-ticket cat ../{late}/secret.txt
try ssh-agent sh -c 'env | grep -q SSH_AUTH_SOCK'
try token sh -c 'env | grep -q {token}'
fi
"""
"""Shell lines of an agent in a worker's ticket folder, run once, after the test made
another ticket's repository beside it: listing the worker's folder, taking the bare cache's
lock (which would stall every claim and push of the host on that remote), reading the
ticket made late, and the ssh agent and token variables of the worker."""


def test_an_agent_in_a_workers_ticket_sees_nothing_of_the_workdir(
    tmp_path: Path, postgres_url: str
) -> None:
    """A sandboxed agent of a real ``ralph worker --workdir`` (outside ``/tmp``) sees none of
    the worker's folder but its own ticket: no bare cache or its lock to hold, no other
    ticket's folder (not even one made after its sandbox started), and neither the worker's
    ``SSH_AUTH_SOCK`` nor its token; and the ticket completes."""
    from pipeline.app.workers import submit
    from pipeline.handlers.store.postgres import PostgresEventStore
    from pipeline.handlers.store.queue import RunQueue, TicketState
    from tests.workers.support import start_worker

    workdir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    token = "zq7" + hashlib.sha256(os.urandom(8)).hexdigest()[:20]
    try:
        script = tmp_path / "agent.sh"
        probes = WORKDIR_PROBES.format(late="t-late", token=token)
        script.write_text("#!/bin/sh\n" + probes + SHELL_REPORTS)
        script.chmod(0o755)
        budgets = "max_iterations = 1\nmax_review_passes = 0\nmax_retries_per_agent = 0"
        clone = make_workspace(
            tmp_path / "clone", scripts={}, agents={"main": [str(script)]}, budgets=budgets,
            sandbox=REQUIRED,
        )  # fmt: skip
        remote = tmp_path / "remote.git"
        subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
        git(clone, "push", "-q", str(remote), "main")
        ticket = submit(postgres_url, clone, remote=str(remote)).ticket
        env = {**os.environ, "SSH_AUTH_SOCK": "/x/agent.sock", "SERVICE_TOKEN": token}
        worker = start_worker(postgres_url, "--workdir", str(workdir), "--poll-seconds",
                              "0.05", cwd=tmp_path, env=env)  # fmt: skip
        try:
            started = workdir / ticket / ".agent" / "started"
            deadline = time.monotonic() + 120
            while not started.exists():
                assert worker.poll() is None, worker.communicate()
                assert time.monotonic() < deadline, "the agent never started"
                time.sleep(0.05)
            late = init_repository(workdir / "t-late")
            (late / "secret.txt").write_text("another ticket's work\n")
            (workdir / ticket / ".agent" / "go").touch()
            while True:
                with PostgresEventStore(postgres_url) as store:
                    found = RunQueue(store).get(ticket)
                assert found is not None
                if found.state in (TicketState.DONE, TicketState.FAILED):
                    break
                assert time.monotonic() < deadline + 60, found
                time.sleep(0.1)
        finally:
            worker.terminate()
            _out, err = worker.communicate(timeout=60)
        assert found.state is TicketState.DONE, (found, err)
        verdicts = _verdicts(workdir / ticket)
        assert verdicts == dict.fromkeys(
            ("workdir-listed", "cache-lock", "late-ticket", "ssh-agent", "token"), "denied"
        ), verdicts
    finally:
        shutil.rmtree(workdir)
