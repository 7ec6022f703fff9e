"""The merge queue (I/O: git, stores, a lock): ``ralph worktrees merge`` lands completed runs'
branches on a target branch, one integrator at a time, in order.

An integration is kept as facts in the completed run's own log (``IntegrationQueued`` and
what followed, see :func:`~pipeline.engine.integrate`), so a killed integrator is finished by
the next one: it first goes on with every integration the logs say is under way, then takes
the ones asked for, in the order named. Integrators of one repository take turns on a lock in
its git folder (the kernel drops it with its holder, however it dies), so the queue's order
is the order they got the lock in.

A queue worker lands a ticket's run through the same queue: a path ticket's in its worktree
(:func:`land_run`), a remote ticket's from the worker's repository ``W/<T>`` onto its
remote's target (:func:`land_remote`). ``W/<T>`` is the run's agents' to write, so nothing
that landing trusts is read from it: the gates' configuration is the ticket's text, the
branch is the ticket's, and the commits landed are the ones the run's log records. Landings
on one remote meet at a PostgreSQL lease named by its URL, whichever host they run on (the
caller gives one name for one remote: a path and its ``file://`` URL are the path).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import final

import attrs
from attrs import frozen

from pipeline import PipelineError
from pipeline.app.workspace._carry import carry_setup
from pipeline.app.workspace._lock import lock_mode
from pipeline.app.workspace._peek import peeked_store
from pipeline.app.workspace._reconcile import recorded_commits
from pipeline.app.workspace._worktrees import (
    RunWorktree,
    WorktreeError,
    common_git_dir,
    find_worktree,
    git_folder_lock,
    main_worktree,
    run_worktrees,
)
from pipeline.core.config import ConfigError, RalphConfig, parse_config
from pipeline.core.state import Integration, IntegrationStatus, Phase, PipelineState
from pipeline.engine import Interrupted, Interruption, RunObserver, integrate, utc_now
from pipeline.events import (
    AgentName,
    CommitCreated,
    Digest,
    IntegrationQueued,
    RunForked,
    RunId,
    TerminationReason,
)
from pipeline.handlers.integration import (
    LOCAL_REFS,
    Integrator,
    RunCommits,
    TargetRefs,
    group_record,
    scratch_folder,
)
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.runtime import (
    GitError,
    GitPolicy,
    WorkspaceLayout,
    digest_of,
    git_out,
    holds,
    revision,
    run_git,
)
from pipeline.handlers.store import (
    NamedStore,
    RunStore,
    StoreCorruptError,
    StoreError,
    StoreMissingError,
    open_store_at,
    store_path,
)

__all__ = [
    "Landing",
    "LandingInterruptedError",
    "hiding_workdir",
    "land_remote",
    "land_run",
    "merge_worktrees",
]

_LOCK_NAME = "ralph-integration.lock"
"""The integrators' turn (:func:`git_folder_lock`), in the repository's common git folder."""


class LandingInterruptedError(PipelineError):
    """A merge stopped at a safe point on a request (SIGINT, SIGTERM): ``reason`` says which;
    ``worktree`` is the worktree whose landing was under way or next. Nothing is left half
    done that the next ``ralph worktrees merge`` does not finish."""

    def __init__(self, reason: str, worktree: RunWorktree | None) -> None:
        super().__init__(
            f"{reason}: the merge stopped while it waited for its turn; nothing was changed"
            if worktree is None
            else f"{reason}: the landing of {worktree.branch} stopped at a safe point; "
            f"ralph worktrees merge {worktree.name} goes on with it"
        )
        self.reason = reason
        self.worktree = worktree


@final
@frozen(kw_only=True)
class Landing:
    """How one worktree's integration ended: its worktree, and where it stands."""

    worktree: RunWorktree
    run_id: str
    integration: Integration


def _target_branch(root: Path, into: str | None) -> str:
    """The branch to land on: ``into``, or the branch the main worktree ``root`` has checked
    out; it must be a branch that exists."""
    if into is None:
        into = git_out(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).strip()
        if not into:
            raise WorktreeError(f"{root} is on no branch (a detached HEAD): name one with --into")
    named = run_git(root, "check-ref-format", "--branch", into, policy=GitPolicy(), check=False)
    if named.returncode != 0 or into.startswith("-"):
        raise WorktreeError(f"--into {into!r}: not a branch name")
    if revision(root, f"refs/heads/{into}") is None:
        raise WorktreeError(f"there is no branch {into!r} in {root}")
    return into


def merge_worktrees(
    root: Path,
    names: Sequence[str],
    *,
    into: str | None = None,
    on_landing: Callable[[Landing], None] | None = None,
    observer: RunObserver | None = None,
    interruption: Interruption | None = None,
) -> list[Landing]:
    """Land the named worktrees' branches on ``into`` (default: the main worktree's branch),
    after finishing the integrations a killed integrator left under way; each outcome as it
    ends (``on_landing``) and all of them, in order. Raises :class:`WorktreeError` for a bad
    request before anything is queued. A worktree left with an integration under way that
    cannot be gone on with is told to ``observer`` as a warning and skipped (raised without
    one): the ones asked for go on. ``observer`` is told each fact the integrations store.
    A request to ``interruption`` stops it at a safe point (see :func:`integrate`) with
    :class:`LandingInterruptedError`."""
    root = main_worktree(root)
    queue = _Queue(root=root, target=_target_branch(root, into), observer=observer,
                   interruption=interruption)  # fmt: skip
    asked = [find_worktree(root, name) for name in dict.fromkeys(names)]
    if lock_mode(WorkspaceLayout(root=root).ralph_dir) == "exclusive":
        raise WorktreeError(f"a run is at work in {root}: merge once it has stopped")
    landings: list[Landing] = []
    with _integrator_turn(root, interruption):
        worktrees = {w.path: w for w in run_worktrees(root)}
        pending = [w for w in worktrees.values() if w.path not in {a.path for a in asked}]
        for worktree in [*pending, *asked]:
            current = worktrees.get(worktree.path, worktree)
            try:
                landing = queue.land(current, asked=worktree in asked)
            except Interrupted as stopped:
                raise LandingInterruptedError(str(stopped), current) from None
            except (WorktreeError, StoreError) as error:
                if worktree in asked or observer is None:
                    raise
                observer.warning(str(error))
                continue
            if landing is not None:
                landings.append(landing)
                if on_landing is not None:
                    on_landing(landing)
    return landings


def land_run(
    root: Path,
    worktree: Path,
    store: RunStore,
    run_id: RunId,
    *,
    into: str | None = None,
    observer: RunObserver | None = None,
    lease: str | None = None,
) -> Landing:
    """Land run ``run_id`` of ``worktree`` (its log in ``store``) on ``into`` (default: the
    main worktree's branch) at once, in the repository's queue: a queue worker's, for a
    ticket run with ``[run] merge = true``; ``lease``: the PostgreSQL store's URL, where the
    integrators of other machines meet."""
    root = main_worktree(root)
    queue = _Queue(root=root, target=_target_branch(root, into), observer=observer)
    found = find_worktree(root, str(worktree))
    with _integrator_turn(root):
        landing = queue.integrate(found, store, run_id, asked=True, lease=lease)
    assert landing is not None  # asked: queued, or landed already
    return landing


def land_remote(
    repo: Path,
    refs: TargetRefs,
    store: RunStore,
    run_id: RunId,
    *,
    branch: str,
    target: str,
    config_text: str,
    url: str,
    lease: str | None = None,
) -> Landing:
    """Land run ``run_id`` (its log in ``store``), which worked on ``branch`` in the ticket's
    repository ``repo``, on the branch ``target`` of the remote at ``url``, read and moved
    through ``refs``; the gates run with the ticket's ``config_text``. ``lease``: the
    PostgreSQL store's URL, where landings on ``url`` take turns (none with another store).
    Raises :class:`WorktreeError` for a ticket that cannot land, and what the landing's git
    and the store raise."""
    try:
        config = parse_config(config_text, f"{url}'s ticket configuration")
    except ConfigError as error:
        raise WorktreeError(str(error)) from error
    config = hiding_workdir(config, repo)
    head = revision(repo, f"refs/heads/{branch}")
    if head is None:
        raise WorktreeError(f"{repo} has no branch {branch}")
    worktree = RunWorktree(
        name=branch, path=repo, branch=branch, head=head, ahead=0, run=run_id,
        phase=None, ended=True, busy=False,
    )  # fmt: skip
    queue = _Queue(root=repo, target=target, refs=refs)
    with _integrator_turn(repo):
        landing = queue.integrate(
            worktree, store, run_id, asked=True, lease=lease,
            configured=(config, digest_of(config_text.encode())),
            lease_name=f"ralph-integration:{url}",
        )  # fmt: skip
    assert landing is not None  # asked: queued, or landed already
    return landing


def hiding_workdir(config: RalphConfig, repo: Path) -> RalphConfig:
    """``config`` with the folder of the ticket repository ``repo`` (the worker's ``W``) in
    its sandbox's ``hide``: its agents and gates, bound back over the hidden folder, see
    nothing of ``W`` but what they work in: not the bare cache (every branch it fetched), the
    locks (one held from inside would stall the host's claims), nor other tickets' folders,
    even those made after the sandbox started. Not written in the ticket's text: the path is
    this host's."""
    hide = (*config.sandbox.hide, str(repo.resolve().parent))
    return attrs.evolve(config, sandbox=attrs.evolve(config.sandbox, hide=hide))


@final
@frozen(kw_only=True)
class _Queue:
    """The integrations one integrator carries out onto ``target`` in the repository whose
    main worktree is ``root``, its turn held: each fact told to ``observer``, a request to
    ``interruption`` stopping it at a safe point; ``refs`` reads and moves the target."""

    root: Path
    target: str
    observer: RunObserver | None = None
    interruption: Interruption | None = None
    refs: TargetRefs = LOCAL_REFS

    def land(self, worktree: RunWorktree, *, asked: bool) -> Landing | None:
        """Queue (``asked``) and carry out one worktree's integration, or go on with the one
        under way; None when there is nothing to do for it."""
        location = peeked_store(worktree.path)
        if worktree.busy:
            if asked:
                raise WorktreeError(f"a run is at work in {worktree.path}: merge once it ended")
            return None
        with _store(location, worktree, must_exist=asked) as store:
            run_id = None if store is None else _latest(store, worktree)
            if store is None or run_id is None:
                if asked:
                    raise WorktreeError(f"{worktree.branch}: no run has been made in it")
                return None
            lease = location if store_path(location) is None else None
            return self.integrate(worktree, store, RunId(run_id), asked=asked, lease=lease)

    def integrate(
        self, worktree: RunWorktree, store: RunStore, run_id: RunId, *, asked: bool,
        lease: str | None, configured: tuple[RalphConfig, Digest] | None = None,
        lease_name: str | None = None,
    ) -> Landing | None:  # fmt: skip
        """Queue (``asked``) and carry out the integration of run ``run_id`` (its log in
        ``store``) of ``worktree``, or go on with the one under way; with the integrators'
        lease in the PostgreSQL database at ``lease``, if one is given (``lease_name``, by
        default the repository's); the gates' configuration is the main workspace's
        unless one is ``configured`` (with its digest)."""
        root, target = self.root, self.target
        events = list(store.read(run_id))
        state, recorded = recorded_commits(events)
        now = state.integration
        config, digest = configured or _config(root, worktree.path)
        queued = None
        if asked and (now is None or not now.status.under_way):
            _check_landable(worktree, run_id, state)
            if (
                now is not None
                and now.status is IntegrationStatus.LANDED
                and holds(root, f"refs/heads/{target}", f"refs/heads/{worktree.branch}")
            ):
                return Landing(worktree=worktree, run_id=run_id, integration=now)
            resolvers = tuple(AgentName(name) for name in config.merge.resolvers)
            queued = IntegrationQueued(
                branch=worktree.branch, target=target, resolvers=resolvers, at=utc_now()
            )
        elif now is None or not now.status.under_way:
            return None
        try:
            scratch, group_file = scratch_folder(root, run_id), group_record(root, run_id)
        except ValueError as error:
            raise WorktreeError(f"{worktree.branch}: {error}") from error
        redactor = Redactor.from_environment(os.environ, config.redaction.variables)
        sources = (e.source_run for e in events if isinstance(e, RunForked))
        made = RunCommits(
            run_id=run_id,
            commits=tuple((r.effect_id, r.sha) for r in recorded),
            sources=tuple(dict.fromkeys(sources)),
        )
        integrator = Integrator(
            root=root,
            scratch=scratch,
            group_file=group_file,
            run_id=run_id,
            config=config,
            config_digest=digest,
            clock=utc_now,
            made=made,
            prepare=lambda scratch: carry_setup(worktree.path, scratch),
            refs=self.refs,
        )
        with _lease(root, lease, lease_name):
            integrator.end_left_behind()
            state = integrate(
                store,
                integrator,
                run_id,
                redactor=redactor,
                queued=queued,
                observer=self.observer,
                interruption=self.interruption,
            )
        assert state.integration is not None  # integrate recorded one or went on with one
        return Landing(worktree=worktree, run_id=run_id, integration=state.integration)


def _check_landable(worktree: RunWorktree, run_id: str, state: PipelineState) -> None:
    """Refuse a run that has not completed its work."""
    if state.phase is not Phase.COMPLETE or state.termination is not TerminationReason.COMPLETED:
        stands = state.termination.value if state.termination else state.phase.value
        raise WorktreeError(
            f"{worktree.branch}: run {run_id} has not completed its work ({stands}); only a "
            "completed run is merged"
        )


def _latest(store: NamedStore, worktree: RunWorktree) -> str | None:
    """The run that worked in ``worktree``: the one its own store names, or, in a store
    shared with other worktrees (``[store] url``), the latest that committed on its branch."""
    summaries = store.runs()
    if worktree.run is not None and any(s.run_id == worktree.run for s in summaries):
        return worktree.run
    for summary in reversed(summaries):
        for event in store.read(summary.run_id):
            if isinstance(event, CommitCreated) and event.branch == worktree.branch:
                return summary.run_id
    return None


@contextlib.contextmanager
def _store(
    location: str, worktree: RunWorktree, *, must_exist: bool
) -> Iterator[NamedStore | None]:
    """The worktree's store, None when it has none yet (and none is needed)."""
    if not must_exist and "://" not in location and not Path(location).is_file():
        yield None
        return
    try:
        opened = open_store_at(location, must_exist=True)
    except (StoreMissingError, StoreCorruptError) as error:
        raise WorktreeError(f"{worktree.branch}: its store cannot be opened: {error}") from error
    except StoreError:
        raise  # a full disk, a server gone: not the worktree's, and it says what to do
    except (OSError, PipelineError) as error:
        raise WorktreeError(f"{worktree.branch}: its store cannot be opened: {error}") from error
    with opened:
        yield opened


def _config(root: Path, worktree: Path) -> tuple[RalphConfig, Digest]:
    """The configuration the gates of an integration run with (their environment, the
    sandbox, git's signing): the main workspace's ``ralph.toml``, which is the person's,
    not the run's worktree's, which its agent could have changed; the worktree's only when
    the workspace has none (a queue's tickets carry theirs). The gates' commands themselves
    are the ones the run recorded when it started."""
    file = WorkspaceLayout(root=root).config
    if not file.is_file():
        file = WorkspaceLayout(root=worktree).config
    try:
        text = file.read_text("utf-8")
        config = parse_config(text, str(file))
    except (OSError, UnicodeDecodeError, ConfigError) as error:
        raise WorktreeError(f"{file}: {error}") from error
    return config, digest_of(text.encode())


def _lease(
    root: Path, url: str | None, name: str | None = None
) -> contextlib.AbstractContextManager[object]:
    """With a PostgreSQL store at ``url`` (a queue's, or ``[store] url``): the repository's
    integrator lease there too (or the one ``name`` names), for integrators the file lock
    cannot see each other through (other machines sharing the repository's folder, or its
    remote); none with a SQLite store (None)."""
    if url is None:
        return contextlib.nullcontext()
    from pipeline.handlers.store.postgres import advisory_lease

    return advisory_lease(url, name or f"ralph-integration:{common_git_dir(root).resolve()}")


@contextlib.contextmanager
def _integrator_turn(root: Path, interruption: Interruption | None = None) -> Iterator[None]:
    """This process's turn as the repository's integrator: waits for the one at work (a
    request to ``interruption`` meanwhile: :class:`LandingInterruptedError`)."""
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(git_folder_lock(root, _LOCK_NAME, interruption))
        except Interrupted as stopped:
            raise LandingInterruptedError(str(stopped), None) from None
        except GitError as error:
            raise WorktreeError(f"cannot find the git folder of {root}: {error}") from error
        yield
