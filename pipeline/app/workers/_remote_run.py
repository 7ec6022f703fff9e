"""A claimed remote ticket's git: the claim on the remote and each commit's push (I/O: git).

A worker with a ``--workdir`` runs a ticket whose branch ``B`` lives on a remote ``URL``. Only
the worker's bare cache (:func:`cache_for`) talks to ``URL``, in the worker's process, never
sandboxed and with none of the repository's code run (``PLAIN``: no hook, even a pre-push one):
credentials come from the worker's global git config alone, and every command names ``URL``
(the cache has no named remote, and ralph writes nothing to its config).

Pushes are fenced by a claim ref, ``refs/ralph/claims/<T>``: a chain of empty-tree commits, one
per claim and one per push. Every claim and every push moves it in the same ``git push
--atomic`` as the branch, each ref with ``--force-with-lease`` on the value this claim last
saw; receive-pack checks both in one ref transaction, so once another worker has claimed the
ticket, a zombie of this one (frozen past its lease, then woken) can move neither.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, final

from pipeline import PipelineError
from pipeline.app.workers._remote import listed_refs
from pipeline.app.workspace import flocked
from pipeline.core.config import ref_problem
from pipeline.handlers.runtime import git_out, run_git
from pipeline.handlers.store import LeaseLostError

__all__ = [
    "CLAIMS",
    "RETRY_S",
    "RemoteMovedError",
    "RemoteRefusedError",
    "RemoteRun",
    "RemoteUnreachableError",
    "cache_for",
    "check_ticket",
]

CLAIMS: Final = "refs/ralph/claims/"
"""Where a ticket's claim ref lives on the remote (its name follows)."""

RETRY_S: Final = (1.0, 2.0, 4.0)
"""The waits before each retry of a command that could not reach the remote."""

_TICKET: Final = re.compile(r"(?!.*-worktrees$)[A-Za-z0-9][A-Za-z0-9_-]{0,99}")
"""A ticket id: the name of a folder of the worker's and of a ref on the remote. It has no dot,
which every name of the worker's own has (``remote-<digest>.git``, its ``.lock``,
``.making-*``); nor does it end in ``-worktrees``, where another ticket's landing works."""

_HOST: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}")
"""A host name, as a claim commit's committer ``ralph@<host>`` gives it."""

_SHA: Final = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A full commit id (SHA-1 or SHA-256), as ``submit --remote`` records the base."""

_CLAIM_TRIES: Final = 3
"""How many times a claim starts over when the remote moved between its look and its push."""


class RemoteRefusedError(PipelineError, RuntimeError):
    """The remote refused what the ticket needs (a push a hook or the host declined, a base it
    lacks): the ticket fails with the message, which names the remote and what git said."""


class RemoteMovedError(RemoteRefusedError):
    """Someone other than ralph moved the run's branch on the remote: the ticket fails, the
    message naming both commits ("cancel, or reset it")."""


class RemoteUnreachableError(PipelineError, OSError):
    """The remote could not be worked with now (a transport or authentication failure after
    the retries, or its claim moving under every try): the worker gives the ticket back for
    later, when another worker may reach the remote."""


def cache_for(workdir: Path, url: str) -> Path:
    """The bare cache of ``url`` in the worker's folder ``workdir`` (one per remote, named by
    a digest of the URL, never by the URL itself)."""
    return workdir / f"remote-{hashlib.sha256(url.encode()).hexdigest()[:16]}.git"


def check_ticket(ticket: str) -> None:
    """Raise ``ValueError`` unless ``ticket`` is a ticket id (letters, digits, ``-``, ``_``,
    not ending in ``-worktrees``): it names a folder of the worker's and a ref on the remote."""
    if not _TICKET.fullmatch(ticket):
        raise ValueError(
            f"{ticket!r} is no ticket id (letters, digits, - and _, not ending in -worktrees)"
        )


@final
class RemoteRun:
    """One claimed remote ticket's git: :meth:`claim` once, then :meth:`publish` per commit.

    ``claimed`` and ``pushed`` are the values of the claim ref and of the branch this worker
    last put on the remote: the leases of its next push.
    """

    def __init__(
        self,
        *,
        url: str,
        cache: Path,
        repo: Path,
        ticket: str,
        base: str,
        target: str,
        branch: str,
        on_pushed: Callable[[str], bool],
        holds: Callable[[], bool],
        rebase_onto: str | None = None,
        retry_s: tuple[float, ...] = RETRY_S,
    ) -> None:
        self.url, self.cache, self.repo, self.ticket = url, cache, repo, ticket
        self.base, self.target, self.branch, self.rebase_onto = base, target, branch, rebase_onto
        check_ticket(ticket)
        # Again on the worker, as the URL is: the store is the whole team's, and a target of
        # "*" would fetch every branch of the remote into the cache and the agent's repository.
        for name in (target, rebase_onto):
            if name is not None and (problem := ref_problem(name)):
                raise ValueError(f"{ticket}'s branch {problem}")
        if not _SHA.fullmatch(base):
            raise ValueError(f"{ticket}'s base {base[:80]!r} is no full commit id")
        self.claim_ref = f"{CLAIMS}{ticket}"
        # Held around every command that writes the cache. Named with a dot, as everything of
        # the worker's own is, so that no ticket's ``<T>.lock`` (ids have none) can be it.
        self._lock = cache.with_name(f"{cache.name}.lock")
        self._head, self._target = f"refs/heads/{branch}", f"refs/heads/{target}"
        # Told each pushed commit (the queue's ``note_pushed``); False: the ticket's lease is gone.
        self._on_pushed = on_pushed
        # Whether the queue's lease still holds the ticket (the queue's ``renew``).
        self._holds = holds
        self._retry_s = retry_s
        self.claimed: str | None = None
        self.pushed: str | None = None
        self.last_host: str | None = None
        """The host of the claim before this worker's (None on a first claim): the one whose
        unpushed work a takeover elsewhere cannot have."""

    def claim(self, *, holder: str, host: str, run_id: str | None) -> None:
        """Claim the ticket on the remote for ``holder`` on ``host``: a first claim
        (``run_id`` None) makes the branch at the base, a takeover needs the branch there.

        Raises :class:`RemoteRefusedError` (:class:`RemoteMovedError` for a branch moved
        from the base) when the ticket cannot go on, :class:`RemoteUnreachableError` when the
        remote cannot be worked with now, and ``LeaseLostError`` when the queue says the
        ticket's lease is gone.
        """
        with flocked(self._lock):
            if not (self.cache / "HEAD").is_file():
                self.cache.mkdir(parents=True, exist_ok=True)
                run_git(self.cache, "init", "-q", "--bare", bare=True)
        onto = f"refs/heads/{self.rebase_onto or self.target}"
        for _try in range(_CLAIM_TRIES):
            branch, claim, target, onto_sha = self._remote_refs(
                self._head, self.claim_ref, self._target, onto
            )
            for name, sha in ((self.target, target), (self.rebase_onto, onto_sha)):
                if name is not None and sha is None:
                    raise RemoteRefusedError(f"{self.url} has no branch {name}")
            wanted = {self._target: self._target, onto: onto}
            if branch is not None:
                wanted[self._head] = self._head
            if claim is not None:
                wanted[self.claim_ref] = self.claim_ref
            self._fetch(self.url, wanted)
            self._check(branch, run_id)
            if claim is not None:
                # A push's commit says no host (``ralph@localhost``): the last claim's does.
                said = self._cache("log", "-1", "--format=%ce", "--grep=^ralph claim: ", claim)
                last = said.removeprefix("ralph@")
                # The remote is the team's to write: only a host name is said, no other bytes.
                self.last_host = last if _HOST.fullmatch(last) else None
            count = 1 + (int(self._cache("rev-list", "--count", claim)) if claim else 0)
            made = self._claim_commit(claim, f"ralph claim: {self.ticket} claim {count} by "
                                      f"{holder} on {host}", host)  # fmt: skip
            leases = {self.claim_ref: (claim, made)}
            if run_id is None:
                leases[self._head] = (branch, self.base)
            # A worker frozen since its queue claim would lease on its successor's claim,
            # just read, and push over it: the queue's word first.
            if not self._holds():
                raise LeaseLostError(f"the lease of {self.ticket} is gone: its claim is not made")
            refused = self._push(leases)
            if refused is None:
                self.claimed, self.pushed = made, branch or self.base
                # The ticket's repository is made from the cache's branch.
                self._set(self._head, self.pushed)
                self._note(self.pushed)
                return
            if self._remote_refs(self._head, self.claim_ref) == (branch, claim):
                # Nothing moved: the host refused (a hook, or no refs outside heads/ and tags/).
                raise RemoteRefusedError(
                    f"{self.url} refused the claim of {self.ticket}: {refused}"
                )
            # The claim or the branch moved since the look (a zombie's last push): look again.
        raise RemoteUnreachableError(
            f"the claim of {self.ticket} on {self.url} moved under each of {_CLAIM_TRIES} tries"
        )

    def publish(self, sha: str) -> None:
        """Put the run's commit ``sha`` (in :attr:`repo`) on the remote's branch, before its
        fact is appended; a push whose answer was lost counts as made.

        Raises ``LeaseLostError`` when another worker's claim is on the remote or the queue
        says the lease is gone, :class:`RemoteMovedError` when someone else moved the branch,
        :class:`RemoteRefusedError` when the remote declined the push, and
        :class:`RemoteUnreachableError` when it could not be reached.
        """
        if self.claimed is None or self.pushed is None:
            raise RemoteRefusedError(f"{self.ticket}: publish before the claim")
        before = self.pushed
        if self.move(self._head, sha, before, f"ralph push: {self.ticket} {sha}") is None:
            return
        (branch,) = self._remote_refs(self._head)
        raise RemoteMovedError(
            f"{self.branch} on {self.url} is at {branch or 'nothing'}, not {before}: "
            f"cancel the ticket, or reset the branch to {before}"
        )

    def move(self, ref: str, new: str, old: str, message: str) -> str | None:
        """Move ``ref`` on the remote from ``old`` to ``new`` (a commit of :attr:`repo`) and
        the claim ref on with it (``message`` its commit's), in one atomic push: None when
        they moved (an answer lost after they did counts), else what git said of the
        refusal, nothing moved, ``ref`` no longer at ``old``. The run's branch moved, the
        queue is told.

        Raises ``LeaseLostError`` when another worker's claim is on the remote or the queue
        says the lease is gone, :class:`RemoteRefusedError` when ``new`` is not in
        :attr:`repo` or the remote declined the push with ``ref`` still at ``old`` (a hook,
        a protected branch), and :class:`RemoteUnreachableError` when the remote could not
        be reached.
        """
        if self.claimed is None:
            raise RemoteRefusedError(f"{self.ticket}: a push before the claim")
        outgoing = f"refs/ralph/outgoing/{self.ticket}"
        # The cache fetches, so the ticket repository's config (the agent's to edit) never
        # decides where the transport, or the credentials, go.
        self._fetch(f"file://{self.repo.resolve()}", {new: outgoing})
        fetched = self._cache("rev-parse", "--verify", "--quiet", f"{outgoing}^{{commit}}")
        if fetched != new:
            raise RemoteRefusedError(f"{self.repo} has no commit {new} (got {fetched or 'none'})")
        claimed = self.claimed
        made = self._claim_commit(claimed, message, None)
        refused = self._push({ref: (old, new), self.claim_ref: (claimed, made)})
        if refused is not None:
            claim, at = self._remote_refs(self.claim_ref, ref)
            if claim not in (claimed, made):
                raise LeaseLostError(f"another worker's claim is on {self.url} ({self.ticket})")
            if at == old:  # nothing moved it: the host declined, and will again
                raise RemoteRefusedError(
                    f"{self.url} refused the push of {new} to {ref}: {refused}"
                )
            return refused
        self.claimed = made
        self._set(ref, new)
        if ref == self._head:
            self.pushed = new
            self._note(new)
        return None

    def fetch(self, ref: str) -> None:
        """Bring the remote's ``ref`` into the cache's ref of that name, wherever it stands
        (:class:`RemoteRefusedError` when the remote has no such ref)."""
        self._fetch(self.url, {ref: ref})

    def _cache(self, *args: str) -> str:
        """What ``git ARGS`` in the cache printed, stripped."""
        return git_out(self.cache, *args, check=False, bare=True).strip()

    def _set(self, ref: str, sha: str) -> None:
        """Point the cache's ``ref`` at ``sha``, under the lock another worker's fetch into the
        same ref takes (else git's ref lock refuses one of the two)."""
        with flocked(self._lock):
            git_out(self.cache, "update-ref", ref, sha, bare=True)

    def _note(self, sha: str) -> None:
        if not self._on_pushed(sha):
            raise LeaseLostError(f"the lease of {self.ticket} is gone: {sha} was pushed for it")

    def _check(self, branch: str | None, run_id: str | None) -> None:
        """Refuse a claim the remote's branch does not allow (the cache holds what it named)."""
        if run_id is not None:
            if branch is None:
                raise RemoteRefusedError(
                    f"run {run_id}'s branch {self.branch} is gone from {self.url}"
                )
            return
        if branch not in (None, self.base):
            raise RemoteMovedError(
                f"{self.branch} on {self.url} is at {branch}, not at the base {self.base}: "
                "cancel the ticket, or delete the branch"
            )
        ancestor = ("merge-base", "--is-ancestor", self.base, self._target)
        if run_git(self.cache, *ancestor, check=False, bare=True).returncode != 0:
            raise RemoteRefusedError(f"{self.target} on {self.url} does not hold {self.base}")

    def _claim_commit(self, parent: str | None, message: str, host: str | None) -> str:
        """An empty-tree commit on the claim chain (after ``parent``), made in the cache."""
        tree = self._cache("hash-object", "-w", "-t", "tree", os.devnull)
        who = ("-c", "user.name=ralph", "-c", f"user.email=ralph@{host or 'localhost'}")
        parents = ("-p", parent) if parent else ()
        return git_out(self.cache, *who, "commit-tree", tree, *parents, "-m", message,
                       bare=True).strip()  # fmt: skip

    def _retrying(self, *args: str) -> tuple[int, str, str]:
        """``git ARGS`` in the cache, retried after each of :data:`RETRY_S` while it fails
        with no answer from the remote (git's 128, but for a missing ref); raises
        :class:`RemoteUnreachableError`."""
        for wait in (*self._retry_s, None):
            done = run_git(self.cache, *args, check=False, bare=True)
            # A missing ref is an answer (git's 128 too): retrying would not make it appear.
            if done.returncode != 128 or "couldn't find remote ref" in done.stderr:
                return done.returncode, done.stdout, done.stderr
            if wait is None:
                # git's message names the repository it could not reach.
                said = " ".join(done.stderr.split())[:500]
                raise RemoteUnreachableError(f"git {args[0]} gave up: {said}")
            time.sleep(wait)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _remote_refs(self, *refs: str) -> tuple[str | None, ...]:
        """What ``refs`` are on the remote now (None: not there)."""
        _code, out, _err = self._retrying("ls-remote", "--end-of-options", self.url, *refs)
        return listed_refs(out, *refs)

    def _fetch(self, url: str, refspecs: dict[str, str]) -> None:
        """Fetch ``refspecs`` (remote ref to the cache's) from ``url`` into the cache, under
        the cache's lock (the worker's other fetches and ref moves write the same refs)."""
        specs = [f"+{source}:{into}" for source, into in refspecs.items()]
        with flocked(self._lock):
            code, _out, err = self._retrying(
                "fetch", "--no-tags", "--no-write-fetch-head", "--end-of-options", url, *specs
            )
        if code != 0:
            raise RemoteRefusedError(f"git fetch {url} failed: {' '.join(err.split())[:500]}")

    def _push(self, leases: dict[str, tuple[str | None, str]]) -> str | None:
        """Move each ref to its new value on the remote in one atomic push, each leased on its
        old one (None: absent); None when the refs are there (an answer lost after receive-pack
        moved them counts), else what git said of the refusal."""
        args = ["push", "--porcelain", "--atomic"]
        for ref, (old, _new) in leases.items():
            args.append(f"--force-with-lease={ref}:{old or ''}")
        args += [
            "--end-of-options",
            self.url,
            *(f"{new}:{ref}" for ref, (_o, new) in leases.items()),
        ]
        try:
            code, out, err = self._retrying(*args)
        except RemoteUnreachableError as error:
            code, out, err = 128, "", str(error)
        said = " ".join((err or out).split())[:500]
        if code == 0:
            return None
        # A refusal, or an answer lost after receive-pack moved the refs: the remote says which.
        if self._remote_refs(*leases) == tuple(new for _old, new in leases.values()):
            return None
        if code == 128:
            raise RemoteUnreachableError(said)
        return said
