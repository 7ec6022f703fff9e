"""``emit``: append one topic line to an events file (I/O), for ``ralph emit`` and for agents
that run in-process.

A line is ``{"topic": ..., "payload": ..., "ts": "<RFC 3339 UTC>"}`` and a newline. It is
written with one ``write()`` on a file opened with ``O_APPEND``, so concurrent emitters never
interleave or tear lines. Everything is checked before anything is written.
"""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from pipeline.errors import PipelineError

__all__ = ["TOPIC_PATTERN", "EmitError", "emit", "emit_line"]

TOPIC_PATTERN = re.compile(r"[A-Za-z0-9_.:-]+")
"""What a topic may consist of."""


class EmitError(PipelineError, ValueError):
    """The topic or payload is invalid, or the line could not be written; nothing was written."""


def emit_line(topic: str, payload: Any, at: datetime) -> bytes:
    """The encoded line for ``topic`` and ``payload`` (any JSON value), newline included."""
    if not TOPIC_PATTERN.fullmatch(topic):
        raise EmitError(f"topic {topic!r} must consist of letters, digits and _ . : - only")
    stamp = at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    try:
        return orjson.dumps({"topic": topic, "payload": payload, "ts": stamp}) + b"\n"
    except TypeError as error:
        raise EmitError(f"the payload is not a JSON value: {error}") from error


def _payload(payload: str | None, as_json: bool) -> Any:
    if not as_json:
        return payload
    if payload is None:
        raise EmitError("--json needs a PAYLOAD")
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError as error:
        raise EmitError(f"the payload is not valid JSON: {error}") from error


def emit(
    events_file: Path,
    topic: str,
    payload: str | None = None,
    *,
    as_json: bool = False,
    at: datetime | None = None,
) -> bytes:
    """Append one line to ``events_file``; return it. ``as_json``: ``payload`` is JSON text,
    kept structured; otherwise it is text (or null when omitted)."""
    line = emit_line(topic, _payload(payload, as_json), at or datetime.now(UTC))
    try:
        events_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(events_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as error:
        raise EmitError(f"cannot open {events_file}: {error.strerror}") from error
    try:
        written = os.write(fd, line)
    except OSError as error:
        raise EmitError(f"cannot write {events_file}: {error.strerror}") from error
    finally:
        os.close(fd)
    if written != len(line):
        # A regular file takes a whole small write; a short one means a full disk.
        raise EmitError(f"{events_file}: only {written} of {len(line)} bytes written (disk full?)")
    return line
