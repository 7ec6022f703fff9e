"""Turning what an agent appended to its events file into facts for the log (I/O).

The runtime calls :func:`read_agent_events` once an agent process has exited, from the position
the log says reading stopped (carried by ``InvokeAgent``). Each complete line becomes one fact,
``TopicPublished`` or ``OutputLineMalformed``, in file order, and ``EventsFileRead`` records the
new position, so a resumed run reads on from there and never reads a line twice.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

from pipeline.events import (
    Count,
    EventsFileRead,
    Instant,
    Json,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    TopicPublished,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.intake._reader import AgentLine, EventsFileReader

__all__ = ["read_agent_events"]


def read_agent_events(
    path: Path, offset: int, lines: int, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """The facts for every line completed in ``path`` after byte ``offset`` (line ``lines``).

    Nothing when nothing new was completed. A file shorter than ``offset`` was truncated or
    replaced behind the engine's back: that is reported as a ``WorkspaceIoError`` and nothing
    is read, because line numbers and offsets would no longer mean anything.
    """
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        size = 0
    except OSError as error:
        return (WorkspaceIoError(WorkspaceErrorKind.READ, str(path), str(error), clock()),)
    if size < offset:
        message = (
            f"the events file has {size} bytes, fewer than the {offset} already read: "
            "it was truncated or replaced while the run was using it"
        )
        return (WorkspaceIoError(WorkspaceErrorKind.READ, str(path), message, clock()),)
    if size == offset:
        return ()
    reader = EventsFileReader(path, offset, lines)
    facts: list[PipelineEvent] = []
    failure: WorkspaceIoError | None = None
    try:
        for record in reader.read():
            at = clock()
            if isinstance(record, AgentLine):
                emitted = None if record.ts is None else Instant(record.ts.astimezone(UTC))
                payload = Json.of(record.payload)
                number = Ordinal(record.line_number)
                facts.append(TopicPublished(record.topic, payload, number, emitted, at))
            else:
                number = Ordinal(record.line_number)
                facts.append(OutputLineMalformed(number, record.content, record.error, at))
    except OSError as error:
        # What was read before the error stands; the position says how far that was.
        failure = WorkspaceIoError(WorkspaceErrorKind.READ, str(path), str(error), clock())
    if reader.offset > offset:
        facts.append(EventsFileRead(Count(reader.offset), Count(reader.lines_read), clock()))
    if failure is not None:
        facts.append(failure)
    return tuple(facts)
