"""Reading an events file incrementally into topic lines and malformed-line records (I/O).

Only complete lines are read: a last line without its newline is still being written and is
left for the next read. Blank lines are skipped but keep their place in the 1-based line
numbering, which follows the file's physical lines. Every other line becomes exactly one
:class:`AgentLine` or one :class:`MalformedLine`, so an agent always learns what was rejected.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple, final

import orjson
from attrs import define, frozen

from pipeline.handlers.intake._emit import TOPIC_PATTERN

__all__ = ["AgentLine", "EventsFileReader", "MalformedLine", "ReadResult", "parse_lines"]

_KEYS = frozenset({"topic", "payload", "ts"})


class AgentLine(NamedTuple):
    """A valid line: ``topic``, its ``payload`` (any JSON value) and ``ts`` when it had one.

    A named tuple rather than an attrs class: a long events file makes millions of them, and
    a tuple is built in a third of the time."""

    line_number: int
    topic: str
    payload: Any
    ts: datetime | None


class MalformedLine(NamedTuple):
    """A line that is not a valid event: its whole ``content`` and what is wrong with it."""

    line_number: int
    content: str
    error: str


@final
@frozen
class ReadResult:
    """What one read found, and how far it got: ``consumed`` bytes over ``lines`` lines."""

    records: tuple[AgentLine | MalformedLine, ...]
    consumed: int
    lines: int


def _shape(value: Any) -> str | None:
    """What is wrong with a parsed line's shape, or None."""
    if not isinstance(value, dict):
        return f"expected a JSON object, got {type(value).__name__}"
    if "topic" not in value:
        return "missing topic"
    topic = value["topic"]
    if not isinstance(topic, str):
        return f"topic is not a string ({type(topic).__name__})"
    if not TOPIC_PATTERN.fullmatch(topic):
        return f"topic {topic[:40]!r} has characters other than letters, digits and _ . : -"
    if not _KEYS.issuperset(value):
        extra = sorted(k for k in value if k not in _KEYS)
        return f"unexpected key {', '.join(map(repr, extra))}"
    return None


_VALID_TOPICS: set[str] = set()
"""Topics already checked against the pattern: a run uses few, over and over."""


def _topic_ok(topic: str) -> bool:
    if topic in _VALID_TOPICS:
        return True
    if TOPIC_PATTERN.fullmatch(topic) is None:
        return False
    if len(_VALID_TOPICS) < 10_000:
        _VALID_TOPICS.add(topic)
    return True


def _line(raw: bytes, number: int) -> AgentLine | MalformedLine:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        return MalformedLine(number, raw.decode("utf-8", "replace"), f"invalid JSON: {error}")
    # The fast path checks the common, valid shape inline; _shape explains anything else.
    if type(value) is not dict or not value.keys() <= _KEYS:
        return MalformedLine(number, raw.decode("utf-8", "replace"), _shape(value) or "invalid")
    topic = value.get("topic")
    if type(topic) is not str or not _topic_ok(topic):
        return MalformedLine(number, raw.decode("utf-8", "replace"), _shape(value) or "invalid")
    stamp = value.get("ts")
    if stamp is None:
        return AgentLine(number, topic, value.get("payload"), None)
    try:
        ts = datetime.fromisoformat(stamp) if type(stamp) is str else None
    except ValueError:
        ts = None
    if ts is None or ts.tzinfo is None:
        return MalformedLine(
            number, raw.decode("utf-8", "replace"), "ts is not an RFC 3339 time with a zone"
        )
    return AgentLine(number, topic, value.get("payload"), ts)


def parse_lines(data: bytes, first_line: int = 1) -> ReadResult:
    """The complete lines of ``data`` (which starts at line ``first_line``) as records."""
    end = data.rfind(b"\n")
    if end < 0:
        return ReadResult((), 0, 0)
    records: list[AgentLine | MalformedLine] = []
    number = first_line
    for raw in data[:end].split(b"\n"):
        if raw.strip():
            records.append(_line(raw, number))
        number += 1
    return ReadResult(tuple(records), end + 1, number - first_line)


@define
class EventsFileReader:
    """Reads what was appended to ``path`` since the last read.

    ``offset`` and ``lines_read`` say where the previous reads stopped; a resumed run starts
    the reader from the values recorded in its log, so no line is ever read twice.
    """

    path: Path
    offset: int = 0
    lines_read: int = 0
    chunk_bytes: int = 1 << 20

    def read(self) -> Iterator[AgentLine | MalformedLine]:
        """The records of every line completed since the last read, streamed chunk by chunk."""
        try:
            handle = self.path.open("rb")
        except FileNotFoundError:
            return
        with handle:
            handle.seek(self.offset)
            pending = b""  # an incomplete line; it starts at self.offset
            while chunk := handle.read(self.chunk_bytes):
                buffer = pending + chunk
                result = parse_lines(buffer, self.lines_read + 1)
                self.offset += result.consumed
                self.lines_read += result.lines
                pending = buffer[result.consumed :]
                yield from result.records
