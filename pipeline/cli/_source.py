"""Where ``ralph`` reads a run from: an event store (the default) or a JSON Lines log (I/O)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

from attrs import frozen

from pipeline.cli._logfile import EventLogError, read_event_log
from pipeline.events import PipelineEvent
from pipeline.handlers.store import DEFAULT_STORE_PATH, SqliteEventStore, StoreError
from pipeline.serialization import EncodedCheckpoint

__all__ = ["LogSource", "SourceError", "open_source"]


class SourceError(EventLogError):
    """The store or log named on the command line cannot be read as asked."""


@frozen
class LogSource:
    """One run's events (re-readable) and stored checkpoints, with a name for messages."""

    label: str
    events: Callable[[], Iterator[PipelineEvent]]
    checkpoints: list[EncodedCheckpoint]
    is_store: bool


@contextlib.contextmanager
def open_source(source: Path | None, run: str | None) -> Iterator[LogSource]:
    """Open ``source`` (default: the workspace's store) at run ``run`` (default: the latest)."""
    path = DEFAULT_STORE_PATH if source is None else source
    if path.suffix == ".jsonl":
        if run is not None:
            raise SourceError(f"{path} is a single run's log; --run applies to a store")
        yield LogSource(str(path), lambda: read_event_log(path), [], False)
        return
    if not path.is_file():
        raise SourceError(
            f"no event store at {path} (give a store or a .jsonl log, or run `ralph demo`)"
        )
    try:
        with SqliteEventStore(path) as store:
            run_id = store.choose_run(run)
            yield LogSource(
                f"{path} run {run_id}",
                lambda: store.read(run_id),
                store.checkpoints(run_id),
                True,
            )
    except StoreError as error:
        raise SourceError(str(error)) from error
