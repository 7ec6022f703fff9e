"""Landing a remote ticket's run on its remote's target (I/O: git, stores, a lease): the merge
queue's integration in the ticket's repository, its target read and moved on the remote.

The repository is the worker's ``W/<T>``, which the run's agents could write, so nothing the
landing trusts is read from it: the gates' configuration is the ticket's text, the branch
is the ticket's, and the commits landed are the ones the run's log records. Landings on one
remote meet at a PostgreSQL lease named by its URL, whichever host they run on (the caller
gives one name for one remote: a path and its ``file://`` URL are the path).
"""

from __future__ import annotations

from pathlib import Path

import attrs

from pipeline.app.workspace._merge import Landing, _integrator_turn, _Queue
from pipeline.app.workspace._worktrees import RunWorktree, WorktreeError
from pipeline.core.config import ConfigError, RalphConfig, parse_config
from pipeline.events import RunId
from pipeline.handlers.integration import TargetRefs
from pipeline.handlers.runtime import digest_of, revision
from pipeline.handlers.store import RunStore

__all__ = ["hiding_workdir", "land_remote"]


def hiding_workdir(config: RalphConfig, repo: Path) -> RalphConfig:
    """``config`` with the folder of the ticket repository ``repo`` (the worker's ``W``) in
    its sandbox's ``hide``: its agents and gates, bound back over the hidden folder, see
    nothing of ``W`` but what they work in: not the bare cache (every branch it fetched), the
    locks (one held from inside would stall the host's claims), nor other tickets' folders,
    even those made after the sandbox started. Not written in the ticket's text: the path is
    this host's."""
    hide = (*config.sandbox.hide, str(repo.resolve().parent))
    return attrs.evolve(config, sandbox=attrs.evolve(config.sandbox, hide=hide))


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
