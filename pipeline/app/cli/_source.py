"""Where ``ralph`` reads a run from: an event store (the default) or a JSON Lines log (I/O)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from attrs import frozen

from pipeline.app.cli._logfile import EventLogError, read_event_log
from pipeline.core.serialization import EncodedCheckpoint
from pipeline.events import PipelineEvent
from pipeline.handlers.runtime import WorkspaceLayout
from pipeline.handlers.store import StoreError, UnknownRunError, open_store_at, store_path

__all__ = ["LogSource", "SourceError", "open_source"]


class SourceError(EventLogError):
    """The store or log named on the command line cannot be read as asked."""


@frozen(kw_only=True)
class LogSource:
    """One run's events (re-readable) and stored checkpoints, with a name for messages."""

    label: str
    events: Callable[[], Iterator[PipelineEvent]]
    checkpoints: list[EncodedCheckpoint]
    run_id: str | None = None
    """The run read from a store (None: a ``.jsonl`` log, which has no checkpoints)."""


@contextlib.contextmanager
def open_source(source: str | Path | None, run: str | None) -> Iterator[LogSource]:
    """Open ``source`` (default: the workspace's store; a path, a store URL or a ``.jsonl``
    log) at run ``run`` (default: the latest)."""
    location = str(WorkspaceLayout(root=Path()).store if source is None else source)
    try:
        path = store_path(location)
    except StoreError as error:
        raise SourceError(str(error)) from error
    if path is not None and path.suffix == ".jsonl":
        log_path = path
        if run is not None:
            raise SourceError(f"{path} is a single run's log; --run applies to a store")
        yield LogSource(label=str(path), events=lambda: read_event_log(log_path), checkpoints=[])
        return
    if path is not None and not path.is_file():
        raise SourceError(
            f"no event store at {path}: no run was stored there yet (`ralph run` starts one, "
            "or name another store or a .jsonl log)"
        )
    # A reader opens the store read-only; a damaged or unreachable store stays a StoreError
    # (the CLI's store-error exit), an unknown run is bad input.
    with open_store_at(location, read_only=True) as store:
        try:
            run_id = store.choose_run(run)
        except UnknownRunError as error:
            raise SourceError(str(error)) from error
        yield LogSource(
            label=f"{store.label} run {run_id}",
            events=lambda: store.read(run_id),
            checkpoints=store.checkpoints(run_id),
            run_id=run_id,
        )
