"""The git side of remote tickets, alone: the claim ref that fences pushes, publishing a run's
commits, and the ticket's repository made from the worker's bare cache. Real git and bare
remotes in the test's folder (a path URL and a ``file://`` one); no database."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from pipeline.app.workers._remote_run import (
    RemoteMovedError,
    RemoteRefusedError,
    RemoteRun,
    RemoteUnreachableError,
    cache_for,
    check_ticket,
)
from pipeline.app.workers._ticket_repo import (
    Restored,
    TicketBusyError,
    ticket_repository,
    ticket_turn,
)
from pipeline.handlers.runtime import GitError, WorkspaceLayout, git_out
from pipeline.handlers.store import LeaseLostError
from tests.runtime.workspace import git
from tests.workers.remotes import bare_remote, effects_on, hook, reflog

TICKET = "t-1"
BRANCH = f"ralph/run-{TICKET}"
CLAIM = f"refs/ralph/claims/{TICKET}"


@pytest.fixture(params=["path", "file"])
def remote(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """A bare remote and its URL, as a path and as a ``file://`` URL."""
    bare = bare_remote(tmp_path / "host").path
    return bare, str(bare) if request.param == "path" else f"file://{bare}"


class Worker:
    """One worker's :class:`RemoteRun` on the ticket, in a workdir of its own."""

    def __init__(
        self, url: str, workdir: Path, base: str, retry_s: tuple[float, ...] = (0.0, 0.0, 0.0)
    ) -> None:
        self.workdir, self.noted = workdir, list[str]()
        workdir.mkdir(parents=True, exist_ok=True)

        def on_pushed(sha: str) -> bool:
            self.noted.append(sha)
            return True

        self.run = RemoteRun(
            url=url,
            cache=cache_for(workdir, url),
            repo=workdir / TICKET,
            ticket=TICKET,
            base=base,
            target="main",
            branch=BRANCH,
            on_pushed=on_pushed,
            retry_s=retry_s,
        )

    def repository(self, restore: Restored | None = None, pending: str | None = None) -> Path:
        """The ticket's repository, made or reused under the ticket's turn."""
        assert self.run.pushed is not None
        with ticket_turn(self.workdir, TICKET):
            return ticket_repository(
                self.workdir,
                self.run.cache,
                ticket=TICKET,
                branch=BRANCH,
                target="main",
                pushed=self.run.pushed,
                pending=pending,
                config_text="[run]\n",
                restore=restore,
            )[0]

    def commit(self, effect: str, text: str) -> str:
        """A commit of the run's in its repository, made for ``effect``; its sha."""
        repo = self.repository()
        (repo / "work.txt").write_text(text)
        git(repo, "add", "work.txt")
        git(repo, "commit", "-q", "-m", f"work\n\nRalph-Effect: {effect}")
        return git(repo, "rev-parse", "HEAD")


def main_of(remote: Path) -> str:
    """The remote's ``main``."""
    return git(remote, "rev-parse", "refs/heads/main")


def test_a_first_claim_makes_the_branch_at_the_base_and_the_claim_ref(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A first claim puts the branch at the base and an empty-tree claim commit naming the
    holder on the remote, in one push, and tells the queue the pushed base."""
    bare, url = remote
    base = main_of(bare)
    worker = Worker(url, tmp_path / "w1", base)
    worker.run.claim(holder="w1", host="h1", run_id=None)
    claim = git(bare, "rev-parse", CLAIM)
    assert git(bare, "rev-parse", f"refs/heads/{BRANCH}") == base
    assert (worker.run.claimed, worker.run.pushed, worker.noted) == (claim, base, [base])
    assert git(bare, "log", "-1", "--format=%T %P %s", claim) == (
        f"4b825dc642cb6eb9a060e54bf8d69288fbee4904  ralph claim: {TICKET} claim 1 by w1 on h1"
    )


def test_a_second_claim_fences_the_first_which_can_push_nothing(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A second first-claim (the branch still at the base) chains its claim on the first's,
    after which the first worker's push moves no ref on the remote: the reflog is unchanged."""
    bare, url = remote
    base = main_of(bare)
    first, second = (Worker(url, tmp_path / name, base) for name in ("w1", "w2"))
    first.run.claim(holder="w1", host="h1", run_id=None)
    second.run.claim(holder="w2", host="h2", run_id=None)
    assert git(bare, "rev-parse", f"{CLAIM}^") == first.run.claimed
    before = reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)
    sha = first.commit("r1:e1", "the first's work\n")
    with pytest.raises(LeaseLostError, match="another worker's claim"):
        first.run.publish(sha)
    assert (reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)) == before
    assert git(bare, "rev-parse", f"refs/heads/{BRANCH}") == base


def test_a_zombie_after_a_takeover_pushes_nothing_and_the_new_claim_goes_on(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A worker that pushed a commit, then lost the ticket to a takeover (frozen past its
    lease), can push nothing more; the successor goes on from the zombie's pushed commit."""
    bare, url = remote
    base = main_of(bare)
    zombie, successor = (Worker(url, tmp_path / name, base) for name in ("w1", "w2"))
    zombie.run.claim(holder="w1", host="h1", run_id=None)
    pushed = zombie.commit("r1:e1", "one\n")
    zombie.run.publish(pushed)
    successor.run.claim(holder="w2", host="h2", run_id="r1")
    assert successor.run.pushed == pushed
    before = reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)
    with pytest.raises(LeaseLostError):
        zombie.run.publish(zombie.commit("r1:e2", "the zombie's\n"))
    assert (reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)) == before
    successor.run.publish(successor.commit("r1:e2", "two\n"))
    assert effects_on(bare, BRANCH) == ["r1:e1", "r1:e2"]


def test_a_takeover_knows_the_host_of_the_claim_before_it(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A takeover's claim reads the host of the claim before it (past that claim's pushes,
    whose commits name no host) and names its own in its claim commit; a first claim knows
    none."""
    bare, url = remote
    base = main_of(bare)
    first, second = (Worker(url, tmp_path / name, base) for name in ("w1", "w2"))
    first.run.claim(holder="w1", host="h1", run_id=None)
    first.run.publish(first.commit("r1:e1", "one\n"))
    second.run.claim(holder="w2", host="h2", run_id="r1")
    assert (first.run.last_host, second.run.last_host) == (None, "h1")
    assert git(bare, "log", "-1", "--format=%ce", CLAIM) == "ralph@h2"


@pytest.mark.parametrize("retry_s", [(), (0.0,)], ids=["looked-up", "pushed-again"])
def test_a_push_whose_answer_was_lost_counts_as_made(
    tmp_path: Path, remote: tuple[Path, str], retry_s: tuple[float, ...]
) -> None:
    """receive-pack killed after its ref transaction committed (the answer never comes back):
    the push counts as made, once, whether the remote's refs are looked up at once or the
    push is tried again (git finds it up to date), and the next push leases on it."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare), retry_s)
    worker.run.claim(holder="w1", host="h1", run_id=None)
    hook(
        bare,
        "reference-transaction",
        'cat >/dev/null\nif [ "$1" = committed ] && [ ! -e "$GIT_DIR/lost" ]; then\n'
        '  touch "$GIT_DIR/lost"; kill -9 "$PPID"\nfi',
    )
    sha = worker.commit("r1:e1", "one\n")
    worker.run.publish(sha)
    assert (bare / "lost").exists()  # the answer was lost indeed
    assert worker.run.pushed == sha
    assert worker.noted[-1] == sha
    assert git(bare, "rev-parse", CLAIM) == worker.run.claimed
    worker.run.publish(worker.commit("r1:e2", "two\n"))
    assert effects_on(bare, BRANCH) == ["r1:e1", "r1:e2"]


def test_a_branch_moved_by_someone_else_stops_the_run_with_both_shas(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A person's push to the run's branch stops the next publish with a message naming the
    branch's commit and the one the run expected; nothing is pushed over it."""
    bare, url = remote
    base = main_of(bare)
    worker = Worker(url, tmp_path / "w1", base)
    worker.run.claim(holder="w1", host="h1", run_id=None)
    source = tmp_path / "host" / "clone"
    theirs = git(source, "commit-tree", "HEAD^{tree}", "-p", base, "-m", "a person's")
    git(source, "push", "-q", "-f", str(bare), f"{theirs}:refs/heads/{BRANCH}")
    with pytest.raises(RemoteMovedError) as stopped:
        worker.run.publish(worker.commit("r1:e1", "one\n"))
    assert theirs in str(stopped.value)
    assert base in str(stopped.value)
    assert git(bare, "rev-parse", f"refs/heads/{BRANCH}") == theirs


def test_the_ticket_repository_holds_no_object_of_another_branch(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """Another ticket's branch on the remote (a commit and a blob of its own) reaches neither
    the worker's cache nor the ticket's repository."""
    bare, url = remote
    source = tmp_path / "host" / "clone"
    (source / "secret.txt").write_text("another ticket's work\n")
    git(source, "add", "secret.txt")
    git(source, "commit", "-q", "-m", "secret")
    git(source, "push", "-q", str(bare), "HEAD:refs/heads/ralph/run-t-other")
    secret = {git(source, "rev-parse", "HEAD"), git(source, "rev-parse", "HEAD:secret.txt")}
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    repo = worker.repository()
    for where in (repo, worker.run.cache):
        listed = git(where, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)")
        assert secret.isdisjoint(listed.split())
    assert git(repo, "symbolic-ref", "HEAD") == f"refs/heads/{BRANCH}"


def test_a_bare_cache_under_another_repository_is_its_own(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A workdir inside another repository (a home folder kept in git): the cache's commands
    act on the cache, never on the repository around it."""
    bare, url = remote
    outer = tmp_path / "home"
    outer.mkdir()
    git(outer, "init", "-q")
    git(outer, "commit", "-q", "--allow-empty", "-m", "dotfiles")
    refs_before = git(outer, "for-each-ref")
    worker = Worker(url, outer / "workdir", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    cache = worker.run.cache
    # Walking up from the cache finds the outer repository; the bare mode names the cache.
    assert git_out(cache, "rev-parse", "--absolute-git-dir").strip() == str(outer / ".git")
    assert git_out(cache, "rev-parse", "--absolute-git-dir", bare=True).strip() == str(cache)
    claimed = f"{worker.run.claimed}^{{commit}}"
    assert git_out(cache, "rev-parse", "--verify", "-q", claimed, bare=True).strip()
    assert not git_out(outer, "rev-parse", "--verify", "-q", claimed, check=False).strip()
    assert git(outer, "for-each-ref") == refs_before
    worker.run.publish(worker.commit("r1:e1", "one\n"))
    assert git(outer, "for-each-ref") == refs_before
    assert effects_on(bare, BRANCH) == ["r1:e1"]


def test_a_new_repository_restores_the_runs_local_state(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A takeover on another host makes the repository at the pushed commit with the carried
    plan, the saved prompt and an events-file stand-in of the read length; a stale half-made
    folder of the ticket goes, another ticket's stays."""
    bare, url = remote
    base = main_of(bare)
    first = Worker(url, tmp_path / "w1", base)
    first.run.claim(holder="w1", host="h1", run_id=None)
    pushed = first.commit("r1:e1", "one\n")
    first.run.publish(pushed)
    second = Worker(url, tmp_path / "w2", base)
    second.run.claim(holder="w2", host="h2", run_id="r1")
    (second.workdir / f".making-{TICKET}-99").mkdir()
    (second.workdir / ".making-t-10-99").mkdir()
    restore = Restored(
        run_id="r1", prompt="Do it.\n", events_read=7, files={".agent/PLAN.md": b"the plan\n"}
    )
    repo = second.repository(restore)
    layout = WorkspaceLayout(root=repo)
    assert git(repo, "rev-parse", "HEAD") == pushed
    assert layout.plan.read_bytes() == b"the plan\n"
    assert layout.saved_prompt("r1").read_text() == "Do it.\n"
    assert layout.events_file("r1").read_bytes() == b"      \n"
    assert (repo / "ralph.toml").is_file()
    assert not (second.workdir / f".making-{TICKET}-99").exists()
    assert (second.workdir / ".making-t-10-99").exists()


def test_the_same_hosts_repository_is_reused_with_its_work(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """The repository one commit past the pushed one, by the log's pending commit step, is
    reused as it is (uncommitted work kept); any other commit there makes it anew."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    worker.commit("r1:e1", "one\n")
    repo = worker.workdir / TICKET
    (repo / "draft.txt").write_text("uncommitted\n")
    assert worker.repository(pending="r1:e1") == repo
    assert (repo / "draft.txt").exists()
    worker.repository(pending="r1:e9")
    assert not (repo / "draft.txt").exists()
    assert git(repo, "rev-parse", "HEAD") == worker.run.pushed


def test_a_ticket_held_on_this_host_is_busy(tmp_path: Path) -> None:
    """A second turn on a ticket whose turn is held (a frozen worker here) is refused at once."""
    with ticket_turn(tmp_path, TICKET), pytest.raises(TicketBusyError):  # noqa: SIM117
        with ticket_turn(tmp_path, TICKET):
            pass


def test_a_hostile_ticket_id_names_nothing_of_the_workers(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A ticket id from the store (the team's to write) never names a file of the worker's
    own: a ticket called like a cache (``remote-<digest>``) holds its turn, and a claim on
    that cache's remote still goes through instead of waiting on the turn's lock for ever;
    an id ending in ``-worktrees`` (another ticket's landing scratch) is refused."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    like_cache = worker.run.cache.name.removesuffix(".git")
    claimed = threading.Event()

    def claim() -> None:
        worker.run.claim(holder="w1", host="h1", run_id=None)
        claimed.set()

    with ticket_turn(worker.workdir, like_cache):
        threading.Thread(target=claim, daemon=True).start()
        assert claimed.wait(30), "the claim waited on the hostile ticket's turn"
    with pytest.raises(ValueError, match="worktrees"):
        check_ticket(f"{TICKET}-worktrees")


def test_a_host_refusing_the_claim_ref_fails_the_ticket_with_gits_message(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A host whose hook declines refs outside heads/ refuses the first claim: the ticket
    fails with what the host said, at once, and nothing moved on the remote."""
    bare, url = remote
    hook(
        bare, "pre-receive", 'if grep -q " refs/ralph/"; then echo "no such refs here"; exit 1; fi'
    )
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    with pytest.raises(RemoteRefusedError, match="no such refs here") as refused:
        worker.run.claim(holder="w1", host="h1", run_id=None)
    assert not isinstance(refused.value, RemoteMovedError)
    assert reflog(bare, f"refs/heads/{BRANCH}") == reflog(bare, CLAIM) == []


def test_an_unreachable_remote_gives_the_ticket_back(tmp_path: Path) -> None:
    """A remote that cannot be reached, after the retries, is an :class:`OSError` the worker
    gives the ticket back on (another worker may reach it), naming what git said."""
    gone = tmp_path / "gone.git"
    worker = Worker(str(gone), tmp_path / "w1", "0" * 40)
    with pytest.raises(RemoteUnreachableError, match=r"gone\.git") as unreachable:
        worker.run.claim(holder="w1", host="h1", run_id=None)
    assert isinstance(unreachable.value, OSError)


def test_a_zombies_push_during_a_takeover_is_its_last(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """A zombie's push landing between the successor's look and its claim push (the one push
    a zombie can make) makes the claim start over on top of it; the zombie's next push moves
    nothing."""
    bare, url = remote
    base = main_of(bare)
    zombie, successor = (Worker(url, tmp_path / name, base) for name in ("w1", "w2"))
    zombie.run.claim(holder="w1", host="h1", run_id=None)
    zombie.run.publish(zombie.commit("r1:e1", "one\n"))
    # The zombie's next push, made ready in its cache, for the remote's hook to send.
    late = zombie.commit("r1:e2", "late\n")
    cache = zombie.run.cache
    git(cache, "fetch", "-q", str(zombie.workdir / TICKET), f"{late}:refs/late")
    fence = git(cache, "commit-tree", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "-p",
                str(zombie.run.claimed), "-m", "ralph push: late")  # fmt: skip
    hook(
        bare,
        "pre-receive",
        f'if grep -q " {CLAIM}$" && [ ! -e "$GIT_DIR/zombie" ]; then\n'
        f'  touch "$GIT_DIR/zombie"\n'
        "  env -u GIT_QUARANTINE_PATH -u GIT_OBJECT_DIRECTORY -u GIT_ALTERNATE_OBJECT_DIRECTORIES"
        f' git --git-dir="{cache}" push -q --atomic "{bare}" {late}:refs/heads/{BRANCH}'
        f" {fence}:{CLAIM}\nfi",
    )
    successor.run.claim(holder="w2", host="h2", run_id="r1")
    assert (bare / "zombie").exists()  # the zombie's push did land between
    assert git(bare, "rev-parse", f"{CLAIM}^") == fence
    assert successor.run.pushed == late
    before = reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)
    with pytest.raises(LeaseLostError):
        zombie.run.publish(zombie.commit("r1:e3", "later\n"))
    assert (reflog(bare, f"refs/heads/{BRANCH}"), reflog(bare, CLAIM)) == before


def test_a_reused_repositorys_config_runs_nothing_of_the_agents_in_its_fetch(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """An agent's ``remote.<url>.uploadpack`` (a command) and ``remote.<url>.vcs`` (a helper)
    in the reused repository's config, keyed by the cache's URL, run nothing when the worker
    refreshes the target there (a refused fetch makes the repository anew); an agent's
    symlink in place of the repository is not followed."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    repo = worker.repository()
    cache_url = f"file://{worker.run.cache.resolve()}"
    marker = tmp_path / "ran"
    git(repo, "config", f"remote.{cache_url}.uploadpack", f"touch {marker}; git-upload-pack")
    assert worker.repository() == repo
    assert not marker.exists()
    git(repo, "config", f"remote.{cache_url}.vcs", "ext")
    assert worker.repository() == repo  # git refuses the helper: the repository is made anew
    assert not git_out(repo, "config", "--get-regexp", "^remote\\.", check=False)
    elsewhere = tmp_path / "elsewhere"
    shutil.move(repo, elsewhere)
    repo.symlink_to(elsewhere)
    assert worker.repository() == repo
    assert not repo.is_symlink()
    assert (elsewhere / ".git").is_dir()


def test_a_reused_repositorys_alternates_run_nothing_of_the_agents_in_its_fetch(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """An agent's ``objects/info/alternates`` and ``core.alternateRefsCommand`` (a shell
    command git runs to list an alternate's refs while it fetches) in the reused repository:
    the worker's refresh of the target there runs nothing, and still brings the target's new
    commit."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    repo = worker.repository()
    marker = tmp_path / "ran"
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", str(elsewhere))
    git(elsewhere, "commit", "-q", "--allow-empty", "-m", "theirs")
    (repo / ".git" / "objects" / "info" / "alternates").write_text(
        f"{elsewhere / '.git' / 'objects'}\n"
    )
    git(repo, "config", "core.alternateRefsCommand", f"touch {marker}; true")
    clone = bare_remote(tmp_path / "other").clone  # a second clone pushes a new main
    git(clone, "push", "-q", "--force", str(bare), "HEAD:refs/heads/main")
    worker.run.fetch("refs/heads/main")
    assert worker.repository() == repo
    assert not marker.exists()
    assert git(repo, "rev-parse", "refs/heads/main") == main_of(bare)


HOOKS = ("post-checkout", "reference-transaction", "post-merge", "pre-push", "post-rewrite",
         "post-index-change", "fsmonitor-watchman", "push-to-checkout")  # fmt: skip
"""The hooks a fetch, a checkout, a push or an upload-pack of the worker's could run."""


def test_a_ticket_repositorys_config_and_hooks_run_nothing_in_the_workers_git(
    tmp_path: Path, remote: tuple[Path, str]
) -> None:
    """Every place an agent could plant code in its ticket's repository (hooks in
    ``.git/hooks`` and a ``core.hooksPath``, ``core.fsmonitor``, ``uploadpack.packObjectsHook``,
    ``core.alternateRefsCommand`` with an alternates file, a filter on every path, an
    external diff, and all of these again through an ``include.path`` file): the worker's
    reuse of the repository, its refresh fetch, and the publishing of a commit (the cache's
    fetch from the repository, which runs its upload-pack) run none of them."""
    bare, url = remote
    worker = Worker(url, tmp_path / "w1", main_of(bare))
    worker.run.claim(holder="w1", host="h1", run_id=None)
    sha = worker.commit("r1:e1", "work\n")  # made before the plants: the test's git is plain
    repo, marker = worker.workdir / TICKET, tmp_path / "ran"
    run = f"touch {marker}; true"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for folder in (hooks, repo / ".git" / "hooks"):
        for name in HOOKS:
            (folder / name).write_text(f"#!/bin/sh\n{run}\n")
            (folder / name).chmod(0o755)
    elsewhere = tmp_path / "elsewhere"
    git(tmp_path, "init", "-q", str(elsewhere))
    (repo / ".git" / "objects" / "info" / "alternates").write_text(
        f"{elsewhere / '.git' / 'objects'}\n"
    )
    planted = {
        "core.hooksPath": str(hooks),
        "core.fsmonitor": run,
        "uploadpack.packObjectsHook": run,
        "core.alternateRefsCommand": run,
        "filter.x.clean": run,
        "filter.x.smudge": run,
        "filter.x.process": run,
        "diff.external": run,
    }
    included = tmp_path / "included.config"
    for key, value in planted.items():
        git(repo, "config", key, value)
        git(tmp_path, "config", "--file", str(included), key, value)
    git(repo, "config", "include.path", str(included))
    (repo / ".git" / "info" / "attributes").write_text("* filter=x diff=x\n")
    worker.run.publish(sha)
    assert git(bare, "rev-parse", f"refs/heads/{BRANCH}") == sha
    assert worker.repository(pending="r1:e1") == repo  # reused: one past the pushed commit
    clone = bare_remote(tmp_path / "other").clone
    git(clone, "push", "-q", "--force", str(bare), "HEAD:refs/heads/main")
    worker.run.fetch("refs/heads/main")
    assert worker.repository() == repo
    assert git(repo, "rev-parse", "refs/heads/main") == main_of(bare)
    assert git(repo, "config", "core.fsmonitor") == run  # the planted repository, reused
    assert not marker.exists()


def test_a_bare_folder_holding_a_commondir_file_is_refused(tmp_path: Path) -> None:
    """git would read a bare repository's objects and refs from where a ``commondir`` file
    in it says; ralph's bare mode refuses such a folder before git runs."""
    elsewhere, cache = bare_remote(tmp_path / "host").path, tmp_path / "cache.git"
    git(tmp_path, "init", "-q", "--bare", str(cache))
    assert git_out(cache, "for-each-ref", bare=True) == ""
    (cache / "commondir").write_text(f"{elsewhere}\n")
    with pytest.raises(GitError, match="commondir"):
        git_out(cache, "for-each-ref", bare=True)
