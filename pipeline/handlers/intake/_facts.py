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

__all__ = ["read_agent_events", "storable_payload"]

_INT_RANGE = range(-(2**63), 2**64)
"""Integers the log keeps exactly (what orjson reads and writes as integers)."""


def _bounded(value: object) -> object:
    """``value`` with every integer outside :data:`_INT_RANGE` as a float, as orjson reads it."""
    if type(value) is int:
        return value if value in _INT_RANGE else float(value)
    if isinstance(value, dict):
        return {key: _bounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_bounded(item) for item in value]
    return value


def storable_payload(value: object) -> Json:
    """A parsed payload as the log keeps it. An integer beyond 64 bits becomes a float (as
    most JSON readers take it); ``ValueError`` says why a payload cannot be kept at all
    (nested too deeply, a number too large even for a float)."""
    try:
        return Json.of(value)
    except RecursionError as error:
        raise ValueError("it is nested too deeply") from error
    except ValueError:
        try:
            return Json.of(_bounded(value))
        except OverflowError as error:
            raise ValueError(f"a number is too large: {error}") from error
        except RecursionError as error:
            raise ValueError("it is nested too deeply") from error


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
                number = Ordinal(record.line_number)
                try:
                    payload = storable_payload(record.payload)
                except ValueError as error:
                    content = f"{{topic {record.topic!r}: payload not kept}}"
                    why = f"the payload cannot be kept: {error}"
                    facts.append(OutputLineMalformed(number, content, why, at))
                    continue
                stamp = record.ts
                try:
                    emitted = None if stamp is None else Instant(stamp.astimezone(UTC))
                except OverflowError:
                    # A zone offset that moves the time out of the calendar (year 1 at +14:00).
                    why = "ts is out of range once taken to UTC"
                    content = f"{{topic {record.topic!r}: ts {stamp}}}"
                    facts.append(OutputLineMalformed(number, content, why, at))
                    continue
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
