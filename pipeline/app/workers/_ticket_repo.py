"""A remote ticket's repository in the worker's folder: reused, or made anew from the bare
cache with its run's local state restored (I/O: git, files and a file lock).

``W/<T>`` is a plain repository with the run's branch ``B`` checked out. It holds the objects of
``B``, the target and ``rebase_onto`` only: it fetches just those refs from the cache, and
upload-pack sends only what they reach, so no object of another ticket's branch is there for an
agent to read. It is made in ``W/.making-<T>-<pid>`` and renamed into place when whole, so a
folder named ``W/<T>`` is never half-made. Everything here runs under the ticket's turn
(:func:`ticket_turn`), which is how a half-made folder is known to be dead.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import final

from attrs import frozen

from pipeline import PipelineError
from pipeline.app.workers._remote_run import check_ticket
from pipeline.app.workspace import flocked
from pipeline.events import PromptKind
from pipeline.handlers.runtime import (
    EFFECT_TRAILER,
    GitError,
    WorkspaceLayout,
    git_out,
    run_git,
    write_own,
)

__all__ = ["Restored", "TicketBusyError", "fetch_from_cache", "head_effect",
           "ticket_repository", "ticket_turn"]  # fmt: skip

_FILE_ONLY = ("-c", "protocol.allow=never", "-c", "protocol.file.allow=always")
"""A fetch of the ticket repository's own reaches the cache only, whatever its config (the
agent's to edit) says with ``url.*.insteadOf`` or ``remote.<url>.vcs`` (a helper program)."""


class TicketBusyError(PipelineError, BlockingIOError):
    """Another process on this host holds the ticket's turn (a frozen worker): the ticket is
    given back for later."""


@final
@frozen(kw_only=True)
class Restored:
    """The local state of a run that worked elsewhere, for its new repository."""

    run_id: str
    prompt: str
    """The prompt text the run started with (its saved copy's bytes, so the digest agrees)."""
    events_read: int
    """How many bytes of the agents' events file the log has read (the fold's offset)."""
    files: Mapping[str, bytes]
    """The carried ``.agent/PLAN.md``, ``.agent/ISSUES.md`` and rendered prompts
    (``.agent/prompts/<kind>.md``), by path (no other path)."""


@contextlib.contextmanager
def ticket_turn(workdir: Path, ticket: str) -> Iterator[None]:
    """This process's turn on ``ticket`` in ``workdir`` for the ``with`` block (the whole of a
    claim), with the half-made repositories of earlier turns removed. Raises
    :class:`TicketBusyError` at once when another process has the turn."""
    check_ticket(ticket)
    workdir.mkdir(parents=True, exist_ok=True)
    turn = contextlib.ExitStack()
    try:
        turn.enter_context(flocked(workdir / f"{ticket}.lock", wait=False))
    except BlockingIOError:
        raise TicketBusyError(f"{ticket} is held by another worker on this host") from None
    with turn:
        # Whoever made these had the turn, and no longer has it: they are dead.
        half = re.compile(rf"\.making-{re.escape(ticket)}-\d+")
        for entry in workdir.iterdir():
            if half.fullmatch(entry.name):
                shutil.rmtree(entry, ignore_errors=True)
        yield


def ticket_repository(
    workdir: Path,
    cache: Path,
    *,
    ticket: str,
    branch: str,
    target: str,
    pushed: str,
    pending: str | None,
    config_text: str,
    rebase_onto: str | None = None,
    setup: Callable[[Path], None] | None = None,
    restore: Restored | None = None,
) -> tuple[Path, bool]:
    """``W/<T>`` ready for the run under :func:`ticket_turn`, and whether it was reused: it
    is when its HEAD is on ``branch`` at ``pushed``, or one commit past it made for the log's
    ``pending`` commit step (its uncommitted work stays); else it is made anew from the
    cache's ``branch`` (at ``pushed``) with ``setup`` (the ticket's setup files),
    ``ralph.toml`` from ``config_text`` when the branch lacks it, and ``restore``'s run
    state, and any work of the ``pending`` step is not in it. Raises :class:`GitError` and
    ``OSError``."""
    repo = workdir / ticket
    refs = [target] if rebase_onto is None else [target, rebase_onto]
    if _reusable(repo, branch, pushed, pending):
        try:
            fetch_from_cache(repo, cache, refs)
            return repo, True
        except GitError:
            pass  # git cannot fetch there (its config broken, say): it is made anew
    if repo.is_symlink():
        repo.unlink()  # not followed: what it points at is not the worker's
    shutil.rmtree(repo, ignore_errors=True)
    making = workdir / f".making-{ticket}-{os.getpid()}"
    shutil.rmtree(making, ignore_errors=True)
    # A ``.git`` folder first, so git is told this repository and never walks up from it.
    (making / ".git").mkdir(parents=True)
    run_git(making, "init", "-q")
    fetch_from_cache(making, cache, [branch, *refs])
    run_git(making, "checkout", "-f", "-q", branch)
    head = git_out(making, "rev-parse", "HEAD").strip()
    if head != pushed:
        raise GitError(f"the cache's {branch} is at {head}, not at the pushed {pushed}")
    if setup is not None:
        setup(making)
    if not os.path.lexists(making / "ralph.toml"):
        write_own(making / "ralph.toml", config_text.encode())
    if restore is not None:
        _restore(WorkspaceLayout(root=making), restore)
    os.rename(making, repo)
    return repo, False


def _restore(layout: WorkspaceLayout, restore: Restored) -> None:
    kept = (layout.plan, layout.issues, *map(layout.prompt, PromptKind))
    carried = {layout.relative(path): path for path in kept}
    for name, body in restore.files.items():
        if name not in carried:
            raise ValueError(f"{name!r} is not a file a run carries ({', '.join(carried)})")
        write_own(carried[name], body)
    write_own(layout.saved_prompt(restore.run_id), restore.prompt.encode())
    # The agents' events file as the bytes the log has read: blanks and a line end, never
    # read, which keep the reader's offset and the reconciliation's check of the file true
    # (the host that read them is gone).
    if (read := restore.events_read) > 0:
        write_own(layout.events_file(restore.run_id), b" " * (read - 1) + b"\n")


def _reusable(repo: Path, branch: str, pushed: str, pending: str | None) -> bool:
    """Whether ``repo`` is this ticket's repository where a run can go on: HEAD on
    ``branch`` at ``pushed``, or one past it by the commit of the ``pending`` step."""
    if repo.is_symlink() or not (repo / ".git").is_dir():
        return False
    try:
        on = git_out(repo, "symbolic-ref", "-q", "HEAD", check=False).strip()
        head = git_out(repo, "rev-parse", "--verify", "-q", "HEAD", check=False).strip()
        if on != f"refs/heads/{branch}" or not head:
            return False
        if head == pushed:
            return True
        parent = git_out(repo, "rev-parse", "--verify", "-q", "HEAD^", check=False).strip()
        effect = head_effect(repo)
    except GitError:
        return False
    return pending is not None and parent == pushed and effect == pending


def head_effect(repo: Path) -> str:
    """The effect id ``repo``'s HEAD commit was made for (its trailer), or "". Raises
    :class:`GitError`."""
    said = f"%(trailers:key={EFFECT_TRAILER},valueonly,separator=%x00)"
    return git_out(repo, "log", "-1", f"--format={said}", "HEAD", check=False).strip()


def fetch_from_cache(repo: Path, cache: Path, branches: list[str]) -> None:
    """Fetch ``branches`` of the cache into ``repo``'s branches of the same names, forced
    (the one checked out too: git moves no file). Raises :class:`GitError`."""
    specs = [f"+refs/heads/{name}:refs/heads/{name}" for name in dict.fromkeys(branches)]
    # The command line's upload-pack beats a ``remote.<url>.uploadpack`` command in the config.
    run_git(repo, *_FILE_ONLY, "fetch", "-q", "--no-tags", "--no-write-fetch-head",
            "--update-head-ok", "--upload-pack=git-upload-pack", f"file://{cache.resolve()}",
            *specs)  # fmt: skip
