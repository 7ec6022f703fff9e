"""Reading and writing event logs as JSON Lines files (I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from pipeline import PipelineError, WireFormatError
from pipeline.core.serialization import decode_event, encode_event
from pipeline.events import PipelineEvent

__all__ = ["EventLogError", "read_event_log", "write_event_log"]


class EventLogError(PipelineError, ValueError):
    """An event log file is missing or holds a line that is not an event."""


def write_event_log(path: Path, events: Iterable[PipelineEvent]) -> None:
    """Write ``events`` to ``path``, one JSON object per line."""
    with path.open("wb") as out:
        for event in events:
            out.write(encode_event(event) + b"\n")


def read_event_log(path: Path) -> Iterator[PipelineEvent]:
    """The events of the log at ``path``, in order, read line by line (blank lines skipped)."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise EventLogError(f"cannot read the event log {path}: {error.strerror}") from error
    with handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield decode_event(line, what=f"{path}:{number}")
            except WireFormatError as error:
                raise EventLogError(str(error)) from error
