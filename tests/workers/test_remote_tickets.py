"""Remote tickets in the queue (issue 49, slice 1): ``ralph submit --remote`` checks the remote
in the person's clone and records where the run starts and lands; the setup files travel in
the store, bounded and written back without following a symlink; path workers never claim a
remote ticket. Real PostgreSQL, bare git remotes in the test's folder."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest

from pipeline.app.workers import RemoteError, remote_url, submit
from pipeline.app.workspace import SetupFileError, write_setup
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import REMOTE_QUEUE, Lease, QueueBell, RunQueue, TicketState
from tests.postgres import schema_at
from tests.runtime.workspace import git, ralph
from tests.workers.remotes import URL_KINDS, bare_remote


def _tickets(url: str) -> list[str]:
    with PostgresEventStore(url) as store:
        return [t.ticket for t in RunQueue(store).tickets()]


@pytest.mark.parametrize(
    "url",
    [
        "/srv/git/repo.git",
        "file:///srv/git/repo.git",
        "ssh://git@example.com:2222/team/repo.git",
        "git@example.com:team/repo.git",
        "example.com:repo",
        "https://example.com/team/repo.git",
        "git://example.com/repo.git",
    ],
)
def test_remote_url_accepts_the_transports_a_worker_uses(url: str) -> None:
    """ssh, scp-like, https, git, file:// and absolute paths are taken as given."""
    assert remote_url(url) == url


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("https://me:hunter2@example.com/repo.git", "password"),
        ("ssh://me:hunter2@example.com/repo.git", "password"),
        ("https://hunter2@example.com/repo.git", "often a token"),
        ("me:hunter2@example.com:repo.git", "password"),
        ("ext::sh -c touch% /tmp/pwned", "remote helper"),
        ("fd::3", "remote helper"),
        ("-uhelp", "option"),
        ("ssh://-oProxyCommand=touch%20x/repo", "option"),
        ("ssh://-oProxyCommand=x@example.com/repo", "option"),
        ("me@-oProxyCommand=x:repo", "relative"),
        ("http://example.com/repo.git", "not one a worker uses"),
        ("repo.git", "relative"),
        ("../repo.git", "relative"),
        ("file://host/srv/repo.git", "file:///"),
        ("/srv/repo.git\nfd::3", "control"),
    ],
)
def test_remote_url_refuses_what_a_worker_must_not_use(url: str, said: str) -> None:
    """A password or an https user name (a token, often; the store is read by the team), a
    remote helper, an option, plain http, a relative path and a file URL with a host are
    refused, the secret never shown."""
    with pytest.raises(RemoteError, match=said) as refused:
        remote_url(url)
    assert "hunter2" not in str(refused.value)


def test_a_url_with_a_password_is_refused_before_anything_is_queued(
    postgres_url: str, tmp_path: Path
) -> None:
    """``ralph submit --remote`` with a password in the URL, given or configured as the named
    remote's, fails saying so without the secret, and the queue stays empty."""
    remote = bare_remote(tmp_path)
    given = ralph(
        "submit",
        "--store",
        postgres_url,
        "-C",
        str(remote.clone),
        "--remote",
        "https://me:hunter2@example.com/repo.git",
        cwd=tmp_path,
    )
    git(remote.clone, "remote", "add", "team", "https://me:hunter2@example.com/repo.git")
    named = ralph(
        "submit", "--store", postgres_url, "-C", str(remote.clone), "--remote", "team", cwd=tmp_path
    )
    for refused in (given, named):
        assert refused.returncode != 0
        assert "password" in refused.stderr
        assert "credential helper" in refused.stderr
        assert "hunter2" not in refused.stderr + refused.stdout
    assert _tickets(postgres_url) == []


def test_uncommitted_tracked_changes_are_refused_unless_allowed(
    postgres_url: str, tmp_path: Path
) -> None:
    """``ralph submit --remote`` from a clone whose tracked file has uncommitted changes,
    which the run (from HEAD, on another host) would never see, is refused naming the file
    and ``--allow-dirty``, queueing nothing (an untracked file does not count); with
    ``--allow-dirty`` the ticket is queued from HEAD, the changes left behind."""
    remote = bare_remote(tmp_path)
    (remote.clone / "notes.txt").write_text("one\n")
    git(remote.clone, "add", "notes.txt")
    git(remote.clone, "commit", "--quiet", "-m", "notes")
    git(remote.clone, "push", "--quiet", "origin", "main")
    (remote.clone / "notes.txt").write_text("two\n")
    (remote.clone / "scratch.txt").write_text("mine\n")
    args = ("submit", "--store", postgres_url, "-C", str(remote.clone), "--remote", "origin")
    refused = ralph(*args, cwd=tmp_path)
    assert refused.returncode != 0
    assert "notes.txt" in refused.stderr, refused.stderr
    assert "--allow-dirty" in refused.stderr
    assert "scratch.txt" not in refused.stderr
    assert _tickets(postgres_url) == []
    allowed = ralph(*args, "--allow-dirty", cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    with PostgresEventStore(postgres_url) as store:
        found = RunQueue(store).get(allowed.stdout.strip())
    assert found is not None
    assert found.base == git(remote.clone, "rev-parse", "HEAD")


@pytest.mark.parametrize("kind", URL_KINDS)
def test_submit_records_the_remote_base_and_target(
    postgres_url: str, tmp_path: Path, kind: str
) -> None:
    """``--remote origin`` (a name) and ``--remote URL`` queue a remote ticket: the URL, the
    clone's HEAD as base, its branch as target, ``ralph/run-<ticket>`` as branch, in the
    queue ``ralph-remote`` without a workspace lock, with the clone's setup files."""
    remote = bare_remote(tmp_path, kind)
    base = git(remote.clone, "rev-parse", "HEAD")
    by_name = ralph(
        "submit",
        "--store",
        postgres_url,
        "-C",
        str(remote.clone),
        "--remote",
        "origin",
        cwd=tmp_path,
    )
    assert by_name.returncode == 0, by_name.stderr
    by_url = submit(postgres_url, remote.clone, remote=remote.url(kind))
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        for ticket in (by_name.stdout.strip(), by_url.ticket):
            found = queue.get(ticket)
            assert found is not None
            assert (found.remote, found.base, found.target, found.branch) == (
                remote.url(kind),
                base,
                "main",
                f"ralph/run-{ticket}",
            )
            assert (found.state, found.workspace) == (TicketState.QUEUED, str(remote.clone))
            assert set(queue.files(ticket)) == {"ralph.toml", "PROMPT.md", ".ralph/iterate.toml"}
            job = store.retrying(
                "look",
                lambda c, t=found: c.execute(
                    "SELECT queue_name, lock FROM procrastinate_jobs WHERE id = %s", (t.job,)
                ).fetchone(),
            )
            assert job == (REMOTE_QUEUE, None)
    assert f"ralph/run-{by_name.stdout.strip()} of {remote.url(kind)}" in by_name.stderr


@pytest.mark.parametrize("kind", URL_KINDS)
def test_a_base_the_remote_lacks_is_refused(postgres_url: str, tmp_path: Path, kind: str) -> None:
    """A HEAD not pushed, a branch the remote lacks, a detached HEAD, a configured ``[run]
    branch``, a ``rebase_onto`` the remote lacks and a workspace inside the clone are each
    refused, and nothing queued."""
    remote = bare_remote(tmp_path, kind)
    url, clone = remote.url(kind), remote.clone

    def refused(said: str) -> None:
        with pytest.raises(RemoteError, match=said):
            submit(postgres_url, clone, remote=url)

    (clone / "more.txt").write_text("not pushed\n")
    git(clone, "add", "more.txt")
    git(clone, "commit", "--quiet", "-m", "not pushed")
    refused("push main first")
    git(clone, "checkout", "--quiet", "-b", "topic")
    refused("has no branch topic: push topic first")
    git(clone, "checkout", "--quiet", "--detach")
    refused("HEAD is detached")
    git(clone, "checkout", "--quiet", "main")
    git(clone, "reset", "--quiet", "--hard", "origin/main")
    config = (clone / "ralph.toml").read_text()
    (clone / "ralph.toml").write_text('branch = "work"\n' + config)
    refused("sets branch = 'work'")
    (clone / "ralph.toml").write_text('rebase_onto = "release"\n' + config)
    refused("no branch release")
    assert _tickets(postgres_url) == []
    (clone / "ralph.toml").write_text(config)
    inside = clone / "inside"
    inside.mkdir()
    (inside / "ralph.toml").write_text(config)
    (inside / "PROMPT.md").write_text("Make the tests pass.\n")
    with pytest.raises(RemoteError, match="top of its clone"):
        submit(postgres_url, inside, remote=url)
    assert _tickets(postgres_url) == []
    assert submit(postgres_url, clone, remote=url).base == git(clone, "rev-parse", "HEAD")


def test_setup_files_travel_with_the_ticket_and_are_bounded(
    postgres_url: str, tmp_path: Path
) -> None:
    """What ``submit --remote`` keeps is what a new clone lacks (an untracked script the
    configuration names, ``.ralph/`` files, a preset's record), written back by
    ``write_setup``; a symlink is never read, and a file over 1 MiB is refused by name."""
    remote = bare_remote(tmp_path)
    clone = remote.clone
    config = (clone / "ralph.toml").read_text()
    (clone / "gate.sh").write_text("#!/bin/sh\nexit 0\n")
    gate = '\n[[gates]]\nname = "g"\nargv = ["sh", "gate.sh"]\n'
    (clone / "ralph.toml").write_text(config + gate)
    git(clone, "add", "ralph.toml")
    git(clone, "commit", "--quiet", "-m", "a gate")
    git(clone, "push", "--quiet", "origin", "main")
    (tmp_path / "secret").write_text("the person's key\n")
    os.symlink(tmp_path / "secret", clone / ".ralph" / "key")
    workflows = Path(git(clone, "rev-parse", "--absolute-git-dir")) / "ralph" / "workflows"
    (workflows / ("d" * 64)).mkdir(parents=True)
    (workflows / ("d" * 64) / "preset.toml").write_text("[chains]\n")
    ticket = submit(postgres_url, clone, remote=str(remote.path))
    with PostgresEventStore(postgres_url) as store:
        kept = RunQueue(store).files(ticket.ticket)
    assert kept == {
        ".ralph/iterate.toml": (clone / ".ralph" / "iterate.toml").read_bytes(),
        "@state/workflows/" + "d" * 64 + "/preset.toml": b"[chains]\n",
        "PROMPT.md": b"Make the tests pass.\n",
        "gate.sh": b"#!/bin/sh\nexit 0\n",
        "ralph.toml": (clone / "ralph.toml").read_bytes(),
    }
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "clone", "--quiet", str(remote.path), str(elsewhere))
    write_setup(elsewhere, kept)
    assert (elsewhere / "gate.sh").read_bytes() == kept["gate.sh"]
    assert os.access(elsewhere / "gate.sh", os.X_OK), "a script (#!) is made runnable"
    assert (elsewhere / ".ralph" / "iterate.toml").read_bytes() == kept[".ralph/iterate.toml"]
    record = elsewhere / ".git" / "ralph" / "workflows" / ("d" * 64) / "preset.toml"
    assert record.read_bytes() == b"[chains]\n"
    (clone / "gate.sh").write_bytes(b"#" * ((1 << 20) + 1))
    with pytest.raises(SetupFileError, match=r"gate\.sh is over 1 MiB"):
        submit(postgres_url, clone, remote=str(remote.path))
    assert _tickets(postgres_url) == [ticket.ticket]


@pytest.mark.parametrize(
    "name", ["../out", "a/../../out", "/tmp/out", ".git/hooks/pre-commit", "sub/.GIT/config", ""]
)
def test_write_setup_refuses_a_name_outside_the_tree_or_under_git(
    tmp_path: Path, name: str
) -> None:
    """A stored name that climbs out, is absolute, is empty or reaches a ``.git`` folder is
    refused, and nothing is written."""
    tree = tmp_path / "tree"
    tree.mkdir()
    with pytest.raises(SetupFileError):
        write_setup(tree, {name: b"x"})
    assert list(tree.iterdir()) == []


def test_write_setup_follows_no_symlink_of_the_tree(tmp_path: Path) -> None:
    """A tree whose folder or file is a symlink out of it (an agent's doing, or the commit's)
    keeps it, and the bytes go nowhere outside the tree."""
    outside = tmp_path / "outside"
    outside.mkdir()
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(outside, tree / "folder")
    os.symlink(outside / "file", tree / "file")
    write_setup(tree, {"folder/x": b"x", "file": b"y", "plain/z": b"z"})
    assert list(outside.iterdir()) == []
    assert (tree / "plain" / "z").read_bytes() == b"z"


def test_a_worker_without_workdir_never_claims_a_remote_ticket(
    postgres_url: str, tmp_path: Path
) -> None:
    """``ralph worker --exit-when-idle`` runs the path ticket and leaves the remote ticket
    queued, unclaimed."""
    remote = bare_remote(tmp_path)
    remote_ticket = submit(postgres_url, remote.clone, remote="origin")
    path_ticket = submit(postgres_url, remote.clone)
    worker = ralph(
        "worker", "--store", postgres_url, "--exit-when-idle", "--poll-seconds", "0.2", cwd=tmp_path
    )
    assert worker.returncode == 0, worker.stderr
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        ran, left = queue.get(path_ticket.ticket), queue.get(remote_ticket.ticket)
    assert ran is not None
    assert left is not None
    assert ran.state is TicketState.DONE, ran.outcome
    assert (left.state, left.claims, left.worker) == (TicketState.QUEUED, 0, None)
    assert remote_ticket.ticket not in worker.stderr


def test_a_remote_claim_takes_only_remote_tickets_and_records_its_host(
    postgres_url: str, tmp_path: Path
) -> None:
    """A claim of the queue ``ralph-remote`` (rung by a remote submit only) takes the remote
    ticket, never the path one, and records its host."""
    remote = bare_remote(tmp_path)
    bell = QueueBell(postgres_url, (REMOTE_QUEUE,))
    try:
        assert not bell.wait(0.3, lambda: False)
        submit(postgres_url, remote.clone)
        assert not bell.wait(0.5, lambda: False), "a path ticket rings only the path queue"
        remote_ticket = submit(postgres_url, remote.clone, remote="origin")
        assert bell.wait(5, lambda: False)
    finally:
        bell.close()
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        claimed = queue.claim("w", 600, queues=(REMOTE_QUEUE,), host="far-host")
        assert claimed is not None
        assert (claimed.ticket, claimed.host) == (remote_ticket.ticket, "far-host")
        assert queue.claim("w", 600, queues=(REMOTE_QUEUE,), host="far-host") is None


def test_pushes_and_carried_files_are_kept_only_while_the_lease_holds(
    postgres_url: str, tmp_path: Path
) -> None:
    """``note_pushed`` and ``carry`` record while the claim holds (a carry replaces the last),
    and once the ticket is released both say False and change nothing; the release rings
    the remote queue's bell."""
    remote = bare_remote(tmp_path)
    ticket = submit(postgres_url, remote.clone, remote="origin").ticket
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        claimed = queue.claim("w", 600, queues=(REMOTE_QUEUE,), host="h")
        assert claimed is not None
        lease = Lease.of(claimed)
        assert queue.note_pushed(lease, "a" * 40)
        assert queue.carry(lease, ".agent/PLAN.md", b"1. first")
        assert queue.carry(lease, ".agent/PLAN.md", b"1. second")
        bell = QueueBell(postgres_url, (REMOTE_QUEUE,))
        try:
            assert not bell.wait(0.2, lambda: False)
            assert queue.release(lease)
            assert bell.wait(5, lambda: False), "a released remote ticket rings its queue"
        finally:
            bell.close()
        assert not queue.note_pushed(lease, "b" * 40)
        assert not queue.carry(lease, ".agent/PLAN.md", b"stale")
        assert not queue.carry(lease, "ISSUES.md", b"stale")
        now = queue.get(ticket)
        assert now is not None
        assert now.pushed == "a" * 40
        assert queue.files(ticket, carried=True) == {".agent/PLAN.md": b"1. second"}
        assert ".agent/PLAN.md" not in queue.files(ticket)


def test_migration_14_keeps_every_ticket(postgres_url: str) -> None:
    """A store at migration 13 opened by this release keeps each ticket as it was (no host,
    nothing pushed, a path ticket), gains ``ticket_files``, and its queued ticket is claimed."""
    with psycopg.connect(postgres_url) as conn:
        schema_at(conn, 13)
        for number, status in enumerate(("succeeded", "todo", "doing"), start=1):
            conn.execute(
                "WITH job AS (INSERT INTO procrastinate_jobs (queue_name, task_name, lock, args,"
                " status) VALUES ('ralph', 'ralph.ticket', %s, jsonb_build_object("
                "'ticket', %s::text, 'workspace', %s::text, 'config', '[a]', 'prompt', 'p'), %s)"
                " RETURNING id) "
                "INSERT INTO tickets (ticket, job_id, worker, claims) "
                "SELECT %s, id, %s, %s FROM job",
                (
                    f"/ws/{number}",
                    f"t-{number}",
                    f"/ws/{number}",
                    status,
                    f"t-{number}",
                    None if status == "todo" else "w",
                    int(status != "todo"),
                ),
            )
    with PostgresEventStore(postgres_url) as store:
        queue = RunQueue(store)
        found = queue.tickets()
        assert [(t.ticket, t.state, t.workspace) for t in found] == [
            ("t-1", TicketState.DONE, "/ws/1"),
            ("t-2", TicketState.QUEUED, "/ws/2"),
            ("t-3", TicketState.RUNNING, "/ws/3"),
        ]
        assert {(t.host, t.pushed, t.remote, t.branch) for t in found} == {(None,) * 4}
        assert queue.files("t-1") == {}
        claimed = queue.claim("new", 600, host="here")
        assert claimed is not None
        assert (claimed.ticket, claimed.host) == ("t-2", "here")
