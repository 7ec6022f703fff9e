"""The person's side of the queue: submit a run for the workers (a path ticket, or a remote
one that runs through a git remote from the clone's HEAD) and cancel a ticket (I/O: the
workspace, git, PostgreSQL)."""

from __future__ import annotations

import uuid
from pathlib import Path

from pipeline import PipelineError
from pipeline.app.workers._remote import remote_spec
from pipeline.app.workflows import Preset, config_with_preset
from pipeline.app.workspace import check_clean, open_workspace, resolve_prompt, setup_files
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.handlers.store.queue import RunQueue, Ticket

__all__ = ["CancelError", "cancel", "submit"]


def submit(
    url: str,
    workspace: Path,
    *,
    prompt: str | None = None,
    prompt_file: Path | None = None,
    preset: Preset | None = None,
    remote: str | None = None,
    allow_dirty: bool = False,
) -> Ticket:
    """Queue a pipeline run for the workers: the workspace is checked now (its ``ralph.toml``,
    with ``preset``'s workflow over it when given, and the prompt, read now: what is
    submitted is what runs) and the ticket returned. With ``remote`` (a URL, or the name of
    one of the clone's remotes), the run goes through that remote from the clone's HEAD and
    lands on its current branch (:func:`~pipeline.app.workers._remote.remote_spec`), with
    the clone's setup files; uncommitted changes to its tracked files, which would stay
    behind, are refused (``RunSetupError``) unless ``allow_dirty``.

    Raises ``ConfigError`` or :class:`~pipeline.app.workspace.RunSetupError` for a workspace that
    could not run, :class:`~pipeline.app.workers.RemoteError` for a remote it cannot run
    through, ``OSError`` for setup files it cannot carry,
    :class:`~pipeline.handlers.store.StoreError` when the queue is unreachable.
    """
    config_text, source_name = None, None
    if preset is not None:
        config_text, source_name = config_with_preset(workspace, preset)
    opened = open_workspace(workspace, config_text=config_text, config_source=source_name)
    source = resolve_prompt(opened, prompt, prompt_file)
    text = source.read().decode("utf-8")
    if config_text is None:
        config_text = opened.layout.config.read_text("utf-8")
    # A run in a worktree of its own may work beside the workspace's others.
    alone = opened.config.run.worktree or opened.config.run.merge
    ticket = f"t-{uuid.uuid4().hex[:12]}"
    spec, files = None, {}
    if remote is not None:
        root, config = opened.layout.root, opened.config
        check_clean(opened, None, allow_dirty=allow_dirty, remote=True)
        spec = remote_spec(
            root, remote, ticket=ticket, branch=config.branch, rebase_onto=config.rebase_onto
        )
        files = setup_files(root)
    with PostgresEventStore(url) as store:
        return RunQueue(store).submit(
            ticket,
            opened.layout.root,
            config_text,
            text,
            lock=not alone,
            remote=spec,
            files=files,
        )


class CancelError(PipelineError, ValueError):
    """The ticket cannot be cancelled (unknown, or its run has ended); the message says why."""


def cancel(url: str, ticket: str, *, why: str = "cancelled") -> Ticket:
    """Cancel a queued or running ticket (``why`` becomes its outcome) and return it as it
    was just before: ``worker`` says who was running it.

    A queued ticket is never claimed; a running one's worker is refused its next append and
    stops the run (and its agent) at its next heartbeat, within a third of its lease.
    Raises :class:`CancelError` for an unknown ticket or one that has ended.
    """
    with PostgresEventStore(url) as store:
        queue = RunQueue(store)
        before = queue.cancel(ticket, why)
        if before is None:
            now = queue.get(ticket)
            if now is None:
                raise CancelError(f"no ticket {ticket!r} in {store.label}")
            raise CancelError(f"{ticket} has ended ({now.state}: {now.outcome}); nothing to cancel")
    return before
