"""Reading what one invocation appended to its events file, within limits (I/O: reads a file).

An agent may write anything: 100,000 lines, a line of 10 MB, a file of a gigabyte. The log
keeps at most :attr:`IntakeLimits.lines` records of one invocation, holding at most
:attr:`IntakeLimits.bytes` of the agent's bytes; a line longer than
:attr:`IntakeLimits.line_bytes` is one malformed record with the line's start only; whatever
is over the limits is one malformed record saying how many lines and bytes were not read.
The position still moves past every complete line, so nothing is read twice, and memory stays
bounded: an unfinished line is kept only up to the line limit, skipped lines are counted, not
kept.
"""

from __future__ import annotations

from typing import BinaryIO, Final, final

from attrs import field, frozen

from pipeline.handlers.intake._reader import AgentLine, MalformedLine, ReadResult, records_of

__all__ = ["EXCERPT_BYTES", "IntakeLimits", "read_bounded"]

EXCERPT_BYTES: Final = 200
"""How much of a line that is not kept whole is kept (its start)."""

_CHUNK: Final = 1 << 20


def _positive(_instance: object, attribute: object, value: int) -> None:
    if not 1 <= value <= 1 << 40:
        raise ValueError(f"{getattr(attribute, 'name', 'limit')} must be from 1, got {value}")


@final
@frozen(kw_only=True)
class IntakeLimits:
    """What one invocation's events may add to the log (``[budgets]`` in ``ralph.toml``)."""

    lines: int = field(default=1_000, validator=_positive)
    """Records (topics and malformed lines) kept per invocation."""
    bytes: int = field(default=1 << 20, validator=_positive)
    """Bytes of the agent's lines kept per invocation (1 MiB)."""
    line_bytes: int = field(default=64 << 10, validator=_positive)
    """The longest line kept whole (64 KiB)."""


def _excerpt(head: bytes) -> str:
    return head[:EXCERPT_BYTES].decode("utf-8", "replace")


def _size(count: int) -> str:
    return f"{count} byte{'' if count == 1 else 's'}"


@final
class _Skipped:
    """The lines not read once a limit was reached (the first one's number and start)."""

    def __init__(self, number: int, head: bytes, length: int) -> None:
        self.first = number
        self.last = number
        self.head = head
        self.bytes = length

    def record(self, limits: IntakeLimits) -> MalformedLine:
        count = self.last - self.first + 1
        which = f"line {self.first}" if count == 1 else f"lines {self.first}-{self.last}"
        why = (
            f"{which} ({count} line{'' if count == 1 else 's'}, {_size(self.bytes)}) not read: "
            f"one invocation may write {limits.lines} lines and {_size(limits.bytes)} "
            "([budgets] max_event_lines, max_event_bytes in ralph.toml)"
        )
        return MalformedLine(line_number=self.first, content=_excerpt(self.head), error=why)


def read_bounded(
    handle: BinaryIO, first_line: int, limits: IntakeLimits, chunk_bytes: int = _CHUNK
) -> ReadResult:
    """The records of the complete lines from ``handle``'s position (the first numbered
    ``first_line``), within ``limits``, read ``chunk_bytes`` at a time. A last line without
    its newline is left unread."""
    cap = limits.line_bytes
    records: list[AgentLine | MalformedLine] = []
    kept = 0  # bytes of the agent's lines held by records
    number = first_line - 1  # the last complete line
    consumed = 0  # bytes of complete lines
    head, length = b"", 0  # the line being assembled: its first cap + 1 bytes, its length
    skipped: _Skipped | None = None

    def complete(line: bytes, size: int) -> None:
        nonlocal kept, skipped
        if skipped is not None:
            skipped.last, skipped.bytes = number, skipped.bytes + size + 1
        elif size <= cap and (not line or line.isspace()):
            return  # a blank line keeps its number and makes no record
        elif len(records) >= limits.lines:
            skipped = _Skipped(number, line, size + 1)
        elif size > cap:
            why = (
                f"the line is {_size(size)}, longer than the {_size(cap)} a line may have "
                "([budgets] max_event_line_bytes in ralph.toml); only its start is kept"
            )
            records.append(MalformedLine(line_number=number, content=_excerpt(line), error=why))
            kept += min(size, EXCERPT_BYTES) + 1
        elif kept + size + 1 > limits.bytes:
            skipped = _Skipped(number, line, size + 1)
        else:
            records.extend(records_of([line], number))
            kept += size + 1

    while data := handle.read(chunk_bytes):
        start = 0
        while True:
            if skipped is not None and length == 0:
                # Past the limits: count whole lines at C speed instead of visiting each.
                count = data.count(b"\n", start)
                if count:
                    end = data.rfind(b"\n") + 1
                    number += count
                    consumed += end - start
                    skipped.last, skipped.bytes = number, skipped.bytes + end - start
                    start = end
            end = data.find(b"\n", start)
            if end < 0:
                piece = data[start:]
                if len(head) <= cap:
                    head += piece[: cap + 1 - len(head)]
                length += len(piece)
                break
            piece = data[start:end]
            line = piece if length == 0 else (head + piece[: cap + 1 - len(head)])
            size = length + len(piece)
            number += 1
            consumed += size + 1
            complete(line, size)
            head, length = b"", 0
            start = end + 1
    if skipped is not None:
        records.append(skipped.record(limits))
    return ReadResult(records=tuple(records), consumed=consumed, lines=number - first_line + 1)
