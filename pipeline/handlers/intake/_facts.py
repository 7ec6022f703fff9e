"""Turning what an agent appended to its events file into facts for the log (I/O).

The runtime calls :func:`read_agent_events` once an agent process has exited, from the position
the log says reading stopped (carried by ``InvokeAgent``). Each complete line becomes one fact,
``TopicPublished`` or ``OutputLineMalformed``, in file order, within the invocation's
:class:`IntakeLimits`, and ``EventsFileRead`` records the new position, so a resumed run reads
on from there and never reads a line twice.

Whatever the bytes, every fact made here can be stored and folded: payloads are bounded in
depth (:data:`MAX_PAYLOAD_DEPTH`) and number size, times lie in the calendar once in UTC,
texts are valid Unicode. Nothing an agent writes raises out of here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Final

from pipeline.events import (
    Count,
    EventsFileRead,
    EventsFileTruncated,
    Instant,
    Json,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    TopicPublished,
    WorkspaceErrorKind,
    WorkspaceIoError,
)
from pipeline.handlers.intake._bounded import IntakeLimits, read_bounded
from pipeline.handlers.intake._files import UnsafeFileError, open_regular
from pipeline.handlers.intake._reader import AgentLine, MalformedLine

__all__ = ["MAX_PAYLOAD_DEPTH", "read_agent_events", "storable_payload"]

MAX_PAYLOAD_DEPTH: Final = 64
"""The deepest nesting of arrays and objects a payload may have. orjson writes at most 254
levels, and the log wraps a payload in an event (and a checkpoint in more): a bound well
below that, checked where the fact is made, keeps every stored form writable."""

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


def _depth(value: object) -> int:
    """How deeply ``value`` nests arrays and objects (without recursion: any depth is safe)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: list[object] = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if level > MAX_PAYLOAD_DEPTH:
            break
        stack.extend((child, level + 1) for child in children)
    return deepest


def storable_payload(value: object) -> Json:
    """A parsed payload as the log keeps it. An integer beyond 64 bits becomes a float (as
    most JSON readers take it); ``ValueError`` says why a payload cannot be kept at all
    (nested deeper than :data:`MAX_PAYLOAD_DEPTH`, a number too large even for a float)."""
    if _depth(value) > MAX_PAYLOAD_DEPTH:
        raise ValueError(f"it is nested more than {MAX_PAYLOAD_DEPTH} levels deep")
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


def _fact(record: AgentLine | MalformedLine, at: Instant) -> TopicPublished | OutputLineMalformed:
    """The fact of one record: a topic, or a malformed line saying why."""
    number = Ordinal(record.line_number)
    if isinstance(record, MalformedLine):
        return OutputLineMalformed(
            line_number=number, content=record.content, error=record.error, at=at
        )
    try:
        payload = storable_payload(record.payload)
    except ValueError as error:
        content = f"{{topic {record.topic!r}: payload not kept}}"
        return OutputLineMalformed(
            line_number=number, content=content, error=f"the payload cannot be kept: {error}", at=at
        )
    stamp = record.ts
    try:
        emitted = None if stamp is None else Instant(stamp.astimezone(UTC))
    except OverflowError:
        # A zone offset that moves the time out of the calendar (year 1 at +14:00).
        content = f"{{topic {record.topic!r}: ts {stamp}}}"
        return OutputLineMalformed(
            line_number=number, content=content, error="ts is out of range once taken to UTC", at=at
        )
    return TopicPublished(
        topic=record.topic, payload=payload, line_number=number, emitted_at=emitted, at=at
    )


def read_agent_events(
    path: Path,
    offset: int,
    lines: int,
    clock: Callable[[], Instant],
    limits: IntakeLimits | None = None,
) -> tuple[PipelineEvent, ...]:
    """The facts for every line completed in ``path`` after byte ``offset`` (line ``lines``),
    within ``limits`` (default: :class:`IntakeLimits`'s defaults).

    Nothing when nothing new was completed. A file shorter than ``offset`` was truncated or
    replaced: ``EventsFileTruncated``, then it is read from its start, its lines numbered on
    from ``lines``. A path that is a symbolic link (or lies in one), or no regular file, is
    not read: one ``OutputLineMalformed`` says so, and the agent is told in its next prompt.
    """
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return ()
    except UnsafeFileError as refusal:
        why = f"the events file was not read: {refusal}"
        return (
            OutputLineMalformed(line_number=Ordinal(lines + 1), content="", error=why, at=clock()),
        )
    except OSError as error:
        return (
            WorkspaceIoError(
                kind=WorkspaceErrorKind.READ, path=str(path), message=str(error), at=clock()
            ),
        )
    facts: list[PipelineEvent] = []
    with os.fdopen(fd, "rb") as handle:
        try:
            size = os.fstat(fd).st_size
            if size < offset:
                facts.append(
                    EventsFileTruncated(offset=Count(offset), size=Count(size), at=clock())
                )
                offset = 0
            if size == offset:
                return tuple(facts)
            handle.seek(offset)
            read = read_bounded(handle, lines + 1, limits or IntakeLimits())
        except OSError as error:
            failure = WorkspaceIoError(
                kind=WorkspaceErrorKind.READ, path=str(path), message=str(error), at=clock()
            )
            return (*facts, failure)
    facts.extend(_fact(record, clock()) for record in read.records)
    if read.consumed:
        facts.append(
            EventsFileRead(
                offset=Count(offset + read.consumed), lines=Count(lines + read.lines), at=clock()
            )
        )
    return tuple(facts)
