"""Landing a remote ticket's run on its remote's ``main``: ``RemoteRefs`` keeps the landing's
``TargetRefs`` contract against a bare remote, and ``land_remote`` replays, gates and moves
the remote's target with the claim, a person's push meanwhile replayed onto, a lander killed
after its push finished by the next. Real git, bare remotes, a real SQLite store."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from attrs import frozen

from pipeline.app.workers._landing import RemoteRefs
from pipeline.app.workers._remote_run import RemoteRun, cache_for
from pipeline.app.workers._ticket_repo import ticket_repository, ticket_turn
from pipeline.app.workspace import drive, land_remote, open_workspace
from pipeline.events import (
    IntegrationGated,
    PipelineEvent,
    RunId,
    TargetAdvanced,
    TargetMoved,
    TerminationReason,
)
from pipeline.handlers.runtime import PromptSource, revision
from pipeline.handlers.store import LeaseLostError, SqliteEventStore
from tests.handlers.test_target_refs import REF, Landing, TargetRefsContract, repository
from tests.runtime.workspace import ROOT, SHELL_REPORTS, gate, git
from tests.workers.remotes import URL_KINDS, BareRemote, bare_remote, hook

TICKET = "t-1"
BRANCH = f"ralph/run-{TICKET}"

pytestmark = pytest.mark.slow  # whole runs, in this process and in others


def remote_run(url: str, workdir: Path, base: str) -> RemoteRun:
    """A worker's :class:`RemoteRun` of the ticket in ``workdir``, not claimed yet."""
    workdir.mkdir(parents=True, exist_ok=True)
    return RemoteRun(
        url=url, cache=cache_for(workdir, url), repo=workdir / TICKET, ticket=TICKET,
        base=base, target="main", branch=BRANCH, on_pushed=lambda _sha: True,
        holds=lambda: True, retry_s=(0.0,),
    )  # fmt: skip


def ticket_repo(run: RemoteRun, workdir: Path, config: str) -> Path:
    """The claimed ticket's repository in ``workdir``."""
    assert run.pushed is not None
    with ticket_turn(workdir, TICKET):
        return ticket_repository(
            workdir, run.cache, ticket=TICKET, branch=BRANCH, target="main",
            pushed=run.pushed, pending=None, config_text=config,
        )[0]  # fmt: skip


class TestRemoteRefs(TargetRefsContract):
    """The contract against a branch of a bare remote, the landing in the ticket's repository
    and another landing pushing from a person's clone."""

    @pytest.fixture(params=URL_KINDS)
    def landing(self, tmp_path: Path, request: pytest.FixtureRequest) -> Landing:
        clone, bare = tmp_path / "clone", tmp_path / "remote.git"
        a, b, c = repository(clone)
        git(tmp_path, "init", "--quiet", "--bare", "--initial-branch=main", str(bare))
        url = str(bare) if request.param == "path" else bare.as_uri()
        git(clone, "push", "--quiet", url, "main")
        run = remote_run(url, tmp_path / "w", a)
        run.claim(holder="w", host="h", run_id=None)
        root = ticket_repo(run, tmp_path / "w", "[run]\n")
        # The landing's commits are made in the ticket's repository: b and c are put there.
        git(root, "fetch", "--quiet", "--no-tags", str(clone), f"{c}:refs/made")
        git(root, "update-ref", "-d", "refs/made")

        def elsewhere(ref: str, sha: str) -> None:
            git(clone, "push", "--quiet", "--force", url, f"{sha}:{ref}")

        return Landing(root=root, refs=RemoteRefs(run), elsewhere=elsewhere, a=a, b=b, c=c)

    def test_a_landing_swap_moves_the_claim_with_the_target(self, landing: Landing) -> None:
        """A swap moves the remote's claim ref on in the same push as the target, so a worker
        fenced by a newer claim could not have made it."""
        assert isinstance(landing.refs, RemoteRefs)
        run = landing.refs.remote
        before = run.claimed
        assert landing.refs.swap(landing.root, REF, landing.b, landing.a, "ralph: test")
        bare = Path(run.url.removeprefix("file://"))
        assert git(bare, "rev-parse", run.claim_ref) == run.claimed != before
        assert git(bare, "rev-parse", f"{run.claim_ref}^") == before

    def test_a_refused_swap_leaves_the_remotes_value_to_read(self, landing: Landing) -> None:
        """A swap refused because another landing pushed the target first brings that push
        into the ticket's repository, so the move's next read reports it (``TargetMoved``
        naming it), not the value it expected."""
        landing.elsewhere(REF, landing.b)
        assert revision(landing.root, REF) == landing.a  # not refreshed yet
        assert not landing.refs.swap(landing.root, REF, landing.c, landing.a, "ralph: test")
        assert revision(landing.root, REF) == landing.b

    def test_a_worker_fenced_by_a_newer_claim_moves_no_target(
        self, landing: Landing, tmp_path: Path
    ) -> None:
        """Once another worker has taken the ticket over (a newer claim on the remote), the
        first one's landing swap moves nothing, its target lease still right, and says its
        lease is lost."""
        assert isinstance(landing.refs, RemoteRefs)
        run = landing.refs.remote
        other = remote_run(run.url, tmp_path / "w2", run.base)
        other.claim(holder="w2", host="h2", run_id="r1")
        with pytest.raises(LeaseLostError):
            landing.refs.swap(landing.root, REF, landing.b, landing.a, "ralph: test")
        assert landing.now() == landing.a


@frozen(kw_only=True)
class Ticket:
    """A remote ticket whose run completed in its repository ``repo``, its commits pushed:
    its remote, worker folder, claimed :class:`RemoteRun`, store and the run's id."""

    remote: BareRemote
    url: str
    workdir: Path
    run: RemoteRun
    repo: Path
    config: str
    store: Path
    run_id: RunId

    def land(self) -> None:
        """``land_remote`` of the run, in this process."""
        with SqliteEventStore(self.store) as store:
            land_remote(
                self.repo, RemoteRefs(self.run), store, self.run_id, branch=BRANCH,
                target="main", config_text=self.config, url=self.url,
            )  # fmt: skip

    def log(self) -> list[PipelineEvent]:
        """The run's log."""
        with SqliteEventStore(self.store) as store:
            return list(store.read(self.run_id))

    def main(self) -> str:
        """Where the remote's ``main`` stands."""
        return git(self.remote.path, "rev-parse", "refs/heads/main")


def completed_ticket(
    tmp: Path, kind: str, gates: str = "", sandbox: str = 'mode = "off"'
) -> Ticket:
    """A remote (its URL of ``kind``) whose ``main`` has ``gates`` in its ``ralph.toml``, and
    a ticket on it whose run completed and whose branch is pushed (``sandbox``: the body of
    its ``[sandbox]``)."""
    remote = bare_remote(tmp / "host", kind)
    url = remote.url(kind)
    agent = json.dumps(["sh", "-c", SHELL_REPORTS])
    config = (
        f"{gates}\n[sandbox]\n{sandbox}\n[budgets]\nmax_retries_per_agent = 1\n\n"
        f'[agents.main]\ncommand = {agent}\ntimeout_s = 60\n\n[chains]\ndefault = ["main"]\n'
    )
    (remote.clone / "ralph.toml").write_text(config)
    git(remote.clone, "commit", "--quiet", "-am", "a run that completes, and its gates")
    git(remote.clone, "push", "--quiet", "origin", "main")
    workdir = tmp / "w"
    run = remote_run(url, workdir, git(remote.clone, "rev-parse", "HEAD"))
    run.claim(holder="w", host="h", run_id=None)
    repo = ticket_repo(run, workdir, config)
    store = tmp / "store.db"
    with SqliteEventStore(store) as opened:
        workspace = open_workspace(repo, config_text=config)
        done = drive(workspace, prompt=PromptSource(text="Do it"), run_id=None, store=opened,
                     signals=False)  # fmt: skip
    assert done.state.progress.termination is TerminationReason.COMPLETED
    run.publish(git(repo, "rev-parse", "HEAD"))  # the worker pushes each commit as it is made
    return Ticket(remote=remote, url=url, workdir=workdir, run=run, repo=repo, config=config,
                  store=store, run_id=done.run_id)  # fmt: skip


def facts(log: list[PipelineEvent], kind: type[PipelineEvent]) -> list[PipelineEvent]:
    """The facts of ``kind`` in ``log``."""
    return [fact for fact in log if isinstance(fact, kind)]


@pytest.mark.parametrize("kind", URL_KINDS)
def test_merge_true_lands_on_the_remotes_main(tmp_path: Path, kind: str) -> None:
    """The run's branch is replayed onto the remote's ``main``, gated with the ticket's
    configuration, and the remote's ``main`` and the run's branch move to the replayed head,
    which the log's one ``TargetAdvanced`` names."""
    ran = tmp_path / "gated.txt"
    ticket = completed_ticket(tmp_path, kind, gate("where", f'pwd >> "{ran}"'))
    start = ticket.main()
    ran.unlink()  # the run's own final gate; the landing's is counted from here
    ticket.land()
    log = ticket.log()
    (advanced,) = facts(log, TargetAdvanced)
    assert isinstance(advanced, TargetAdvanced)
    assert (advanced.old, advanced.new) == (start, ticket.main())
    assert git(ticket.remote.path, "rev-parse", f"refs/heads/{BRANCH}") == advanced.new
    assert git(ticket.repo, "rev-parse", "refs/heads/main", "HEAD").split() == [advanced.new] * 2
    assert [Path(p).name for p in ran.read_text().split()] == [f".integration-{ticket.run_id}"]
    assert git(ticket.remote.path, "rev-list", "--count", f"{start}..main") == "1"


def test_the_gates_run_with_the_tickets_configuration_not_the_repositorys(
    tmp_path: Path,
) -> None:
    """The landing's gate gets the environment the ticket's configuration gives it, not the
    one of the ``ralph.toml`` in the ticket's repository, which the run's agents could
    write."""
    said = tmp_path / "who.txt"
    ticket = completed_ticket(
        tmp_path, "path", gate("who", f'echo "$WHO" > "{said}"') + 'env = {WHO = "ticket"}\n'
    )
    edited = ticket.config.replace('WHO = "ticket"', 'WHO = "agent"')
    (ticket.repo / "ralph.toml").write_text(edited)  # as an agent could have left it
    ticket.land()
    assert said.read_text().strip() == "ticket"
    assert facts(ticket.log(), TargetAdvanced)


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_a_sandboxed_landing_gate_sees_nothing_of_the_workdir() -> None:
    """The landing's gate, which runs the agents' code in a scratch worktree below the
    worker's folder (outside ``/tmp``), sees nothing of that folder beyond what it works in:
    no bare cache (every branch fetched), no lock, no other ticket's repository; so the
    landing, gated by whether it saw any, lands."""
    tmp = Path(tempfile.mkdtemp(dir="/var/tmp"))
    try:
        workdir = tmp / "w"
        other = workdir / "t-other"
        peek = (
            'case "$PWD" in *.integration-*) '
            f'! ls -A "{workdir}" | grep -q -e remote- -e lock -e t-other '
            f'&& ! cat "{other}/.git/HEAD";; esac'
        )
        workdir.mkdir()
        git(workdir, "init", "-q", str(other))  # another ticket's repository
        ticket = completed_ticket(tmp, "path", gate("peek", peek), 'mode = "required"')
        start = ticket.main()
        ticket.land()
        (advanced,) = facts(ticket.log(), TargetAdvanced)
        assert isinstance(advanced, TargetAdvanced)
        assert (advanced.old, advanced.new) == (start, ticket.main())
    finally:
        shutil.rmtree(tmp)


@pytest.mark.parametrize("kind", URL_KINDS)
def test_a_push_to_main_during_the_gates_is_replayed_onto_then_landed(
    tmp_path: Path, kind: str
) -> None:
    """A person's commit pushed to the remote's ``main`` while the landing's gate runs is
    found by the move (``TargetMoved`` once, nothing overwritten), and the branch is
    replayed onto it and landed on top."""
    person = tmp_path / "person"
    pushes = (
        'case "$PWD" in *.integration-*) '
        f'if [ ! -e "{person}.done" ]; then touch "{person}.done"; '
        f'git -C "{person}" commit --quiet --allow-empty -m "a person" && '
        f'git -C "{person}" push --quiet origin main; fi;; esac'
    )
    ticket = completed_ticket(tmp_path, kind, gate("pushes", pushes))
    git(tmp_path, "clone", "--quiet", ticket.url, str(person))
    git(person, "config", "user.name", "person")
    git(person, "config", "user.email", "person@example.invalid")
    ticket.land()
    theirs = git(person, "rev-parse", "HEAD")
    log = ticket.log()
    (moved,) = facts(log, TargetMoved)
    assert isinstance(moved, TargetMoved)
    assert moved.found == theirs
    (advanced,) = facts(log, TargetAdvanced)
    assert isinstance(advanced, TargetAdvanced)
    assert (advanced.old, advanced.new) == (theirs, ticket.main())
    assert git(ticket.remote.path, "rev-parse", f"{advanced.new}^") == theirs
    assert len(facts(log, IntegrationGated)) == 2  # gated again on the new head


LANDER = """
import json, os, sys
from pathlib import Path
from pipeline.app.workers._landing import RemoteRefs
from pipeline.app.workers._remote_run import RemoteRun
from pipeline.app.workspace import land_remote
from pipeline.handlers.store import LeaseLostError, SqliteEventStore

args = json.loads(sys.argv[1])
Path(args["pid"]).write_text(str(os.getpid()))
run = RemoteRun(
    url=args["url"], cache=Path(args["cache"]), repo=Path(args["repo"]), ticket=args["ticket"],
    base=args["base"], target="main", branch=args["branch"], on_pushed=lambda _sha: True,
    holds=lambda: True,
)
run.claim(holder=args["holder"], host="h", run_id=args["run_id"])
with SqliteEventStore(args["store"]) as store:
    land_remote(run.repo, RemoteRefs(run), store, args["run_id"], branch=args["branch"],
                target="main", config_text=args["config"], url=args["url"])
"""
"""A worker's landing in a process of its own: it takes the ticket over, then lands it."""


def test_kill_9_after_the_target_push_is_finished_by_the_next_landing(tmp_path: Path) -> None:
    """A lander killed (SIGKILL) once the remote's ``main`` moved, before its fact, leaves the
    landing under way; the next worker's landing finds the move made and records it:
    ``TargetAdvanced`` once, the remote's ``main`` moved once."""
    ticket = completed_ticket(tmp_path, "file")
    start = ticket.main()
    pid, killed = tmp_path / "lander.pid", tmp_path / "killed"
    hook(ticket.remote.path, "post-receive", f"""
while read old new ref; do
  if [ "$ref" = refs/heads/main ] && [ ! -e "{killed}" ]; then
    touch "{killed}"; kill -9 "$(cat "{pid}")"
  fi
done""")  # fmt: skip

    def lander(holder: str) -> subprocess.CompletedProcess[str]:
        args = {
            "pid": str(pid), "url": ticket.url, "cache": str(ticket.run.cache),
            "repo": str(ticket.repo), "ticket": TICKET, "base": ticket.run.base,
            "branch": BRANCH, "holder": holder, "run_id": ticket.run_id,
            "store": str(ticket.store), "config": ticket.config,
        }  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        return subprocess.run([sys.executable, "-c", LANDER, json.dumps(args)], env=env,
                              capture_output=True, text=True, timeout=120)  # fmt: skip

    first = lander("w1")
    assert first.returncode == -9, first.stderr[-3000:]
    assert killed.exists()
    landed = ticket.main()
    assert landed != start
    assert not facts(ticket.log(), TargetAdvanced)  # killed before its fact
    second = lander("w2")
    assert second.returncode == 0, second.stderr[-3000:]
    (advanced,) = facts(ticket.log(), TargetAdvanced)
    assert isinstance(advanced, TargetAdvanced)
    assert (advanced.old, advanced.new) == (start, landed)
    assert ticket.main() == landed
    assert git(ticket.remote.path, "rev-parse", f"refs/heads/{BRANCH}") == landed
    assert git(ticket.remote.path, "rev-list", "--count", f"{start}..main") == "1"
