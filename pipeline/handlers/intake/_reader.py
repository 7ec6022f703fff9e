"""Reading an events file incrementally into topic lines and malformed-line records (I/O).

Only complete lines are read: a last line without its newline is still being written and is
left for the next read. Blank lines are skipped but keep their place in the 1-based line
numbering, which follows the file's physical lines. Every other line becomes exactly one
:class:`AgentLine` or one :class:`MalformedLine`, so an agent always learns what was rejected.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, Final, final

import orjson
from attrs import define, frozen

from pipeline.handlers.intake._emit import topic_problem

__all__ = [
    "AgentLine",
    "EventsFileReader",
    "MalformedLine",
    "ReadResult",
    "parse_lines",
    "records_of",
]

_KEYS = frozenset({"topic", "payload", "ts"})


@final
@frozen(kw_only=True)
class AgentLine:
    """A valid line: ``topic``, its ``payload`` (any JSON value) and ``ts`` when it had one."""

    line_number: int
    topic: str
    payload: Any
    ts: datetime | None


@final
@frozen(kw_only=True)
class MalformedLine:
    """A line that is not a valid event: its whole ``content`` and what is wrong with it."""

    line_number: int
    content: str
    error: str


@final
@frozen(kw_only=True)
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
    if topic not in _VALID_TOPICS and not _topic_ok(topic):
        return topic_problem(topic)
    if not _KEYS.issuperset(value):
        # Keys are the agent's text: a few, cut short, so the error stays one short line.
        extra = sorted(k[:40] for k in value if k not in _KEYS)
        more = f" and {len(extra) - 3} more" if len(extra) > 3 else ""
        return f"unexpected key {', '.join(map(repr, extra[:3]))}{more}"
    return None


_VALID_TOPICS: set[str] = set()
"""Topics already checked against the pattern: a run uses few, over and over."""


def _topic_ok(topic: str) -> bool:
    """Whether a topic not yet in :data:`_VALID_TOPICS` is valid (then it is remembered)."""
    if topic_problem(topic) is not None:
        return False
    if len(_VALID_TOPICS) < 10_000:
        _VALID_TOPICS.add(topic)
    return True


_RFC_3339: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})"
)


def _time(stamp: object) -> datetime | None:
    """``stamp`` as a time when it is an RFC 3339 time with a zone, else None."""
    if type(stamp) is not str or _RFC_3339.fullmatch(stamp) is None:
        return None
    try:
        return datetime.fromisoformat(stamp.upper().replace(" ", "T"))
    except ValueError:  # a well-formed but impossible date, such as February 30
        return None


def _line(raw: bytes, number: int) -> AgentLine | MalformedLine:
    """The record of one non-blank line, naming what is wrong with a bad one."""
    try:
        value = orjson.loads(raw)
    except (orjson.JSONDecodeError, RecursionError) as error:
        return _malformed(raw, number, f"invalid JSON: {error}")
    problem = _shape(value)
    if problem is not None:
        return _malformed(raw, number, problem)
    stamp = value.get("ts")
    ts = None if stamp is None else _time(stamp)
    if stamp is not None and ts is None:
        return _malformed(raw, number, "ts is not an RFC 3339 time with a zone")
    return AgentLine(line_number=number, topic=value["topic"], payload=value.get("payload"), ts=ts)


def _malformed(raw: bytes, number: int, error: str) -> MalformedLine:
    """The record of a bad line: all of it, as text, and what is wrong with it."""
    return MalformedLine(line_number=number, content=raw.decode("utf-8", "replace"), error=error)


def records_of(lines: list[bytes], first_line: int) -> Iterator[AgentLine | MalformedLine]:
    """The record of each line in ``lines`` (complete lines, the first numbered ``first_line``),
    blank lines skipped: what :class:`EventsFileReader` and the bounded intake share. Records
    are yielded one by one, not collected: a list of a chunk's records kept them all alive,
    and the garbage collector's scans of them cost a quarter of the time."""
    for number, raw in enumerate(lines, first_line):
        if raw and not raw.isspace():
            yield _line(raw, number)


def parse_lines(data: bytes, first_line: int = 1) -> ReadResult:
    """The complete lines of ``data`` (which starts at line ``first_line``) as records."""
    end = data.rfind(b"\n")
    if end < 0:
        return ReadResult(records=(), consumed=0, lines=0)
    lines = data[:end].split(b"\n")
    return ReadResult(
        records=tuple(records_of(lines, first_line)), consumed=end + 1, lines=len(lines)
    )


@define(kw_only=True)
class EventsFileReader:
    """Reads what was appended to ``path`` since the last read.

    ``offset`` and ``lines_read`` say where the previous reads stopped; a resumed run starts
    the reader from the values recorded in its log, so no line is ever read twice. They move
    on once every record of a chunk has been yielded.
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
                end = buffer.rfind(b"\n")
                if end < 0:
                    pending = buffer
                    continue
                lines = buffer[:end].split(b"\n")
                yield from records_of(lines, self.lines_read + 1)
                self.offset += end + 1
                self.lines_read += len(lines)
                pending = buffer[end + 1 :]
