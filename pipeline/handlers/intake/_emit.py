"""``emit``: append one topic line to an events file (I/O), for ``ralph emit`` and for agents
that run in-process.

A line is ``{"topic": ..., "payload": ..., "ts": "<RFC 3339 UTC>"}`` and a newline. It is
written with one ``write()`` on a file opened with ``O_APPEND``, so concurrent emitters never
interleave or tear lines; when the file does not end in a newline (a writer left its line
unfinished), the line starts with one, so it never becomes the end of another writer's line.
The file must be a regular file reached through no symbolic link (a FIFO would block, a link
could lead out of the workspace). Everything is checked before anything is written.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import time
from pathlib import Path

from pipeline import PipelineError
from pipeline.handlers.intake._files import UnsafeFileError, open_regular

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from typing import Any, Final

__all__ = [
    "MAX_TOPIC_CHARS",
    "TOPIC_PATTERN",
    "DiskFullError",
    "EmitError",
    "emit",
    "emit_line",
    "emit_value",
    "end_unfinished_line",
    "topic_problem",
]

TOPIC_PATTERN = re.compile(r"[A-Za-z0-9_.:-]+")
"""What a topic may consist of."""

MAX_TOPIC_CHARS: Final = 200
"""The longest topic: topics are names (``build.done``), kept in the state and shown in
prompts; a longer one is an agent's mistake or an attack."""


def topic_problem(topic: str) -> str | None:
    """What is wrong with ``topic``, or None: letters, digits and ``_ . : -`` only, at most
    :data:`MAX_TOPIC_CHARS`, and no empty dot-separated segment (``a..b``, ``.a``, ``a.``)."""
    if len(topic) > MAX_TOPIC_CHARS:
        return f"topic {topic[:40]!r}... is {len(topic)} characters, over {MAX_TOPIC_CHARS}"
    if not TOPIC_PATTERN.fullmatch(topic):
        return f"topic {topic[:40]!r} has characters other than letters, digits and _ . : -"
    if "" in topic.split("."):
        return f"topic {topic[:40]!r} has an empty segment (a leading, trailing or double '.')"
    return None


class EmitError(PipelineError, ValueError):
    """The topic or payload is invalid, or the line could not be written; nothing was written."""


class DiskFullError(EmitError):
    """The disk (a quota, a file size limit) had no room for the line; nothing was written."""


_NO_ROOM: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def _stamp(at: datetime | None) -> str:
    # RFC 3339 UTC to the millisecond (truncated, as isoformat does). Formatted with ``time``:
    # importing ``datetime`` costs an eighth of the command.
    if at is None:
        seconds, ms = divmod(time.time_ns() // 1_000_000, 1000)
    else:
        # The whole second apart: a float timestamp with its microseconds can round up to the
        # next second (year 2515, .999999).
        seconds, ms = int(at.replace(microsecond=0).timestamp()), at.microsecond // 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


def emit_line(topic: str, payload: Any, at: datetime | None = None) -> bytes:
    """The encoded line for ``topic`` and ``payload`` (any JSON value), newline included,
    stamped with ``at`` (default: now)."""
    problem = topic_problem(topic)
    if problem is not None:
        raise EmitError(problem)
    line = {"topic": topic, "payload": payload, "ts": _stamp(at)}
    try:
        _check_value(payload)
        # The standard library's encoder, not orjson: an agent runs this once per topic, and
        # importing orjson costs more than the rest of the command (the reader uses orjson).
        text = json.dumps(line, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8") + b"\n"
    except (TypeError, ValueError, RecursionError, OverflowError) as error:
        # ValueError: NaN or infinity, or (UnicodeEncodeError) a lone surrogate in a string.
        raise EmitError(f"the payload is not a JSON value: {error}") from error


def _payload(payload: str | None, as_json: bool) -> Any:
    if not as_json:
        return payload
    if payload is None:
        raise EmitError("--json needs a PAYLOAD")
    try:
        value = json.loads(
            payload,
            parse_constant=_no_constant,
            parse_int=_integer,
            parse_float=_finite,
            object_pairs_hook=_object,
        )
    except (ValueError, RecursionError, OverflowError) as error:
        raise EmitError(f"the payload is not valid JSON: {error}") from error
    return value  # its strings and keys are checked with every payload, by emit_line


def _integer(digits: str) -> int:
    # The reader (orjson) reads an integer past 64 bits as a float: one past a double's range
    # it cannot read at all (OverflowError here, as there).
    value = int(digits)
    if not -(2**63) <= value < 2**64:
        float(value)
    return value


def _check_value(value: Any) -> None:
    """Refuse what the reader (orjson) could not read back as this value: a key that is no
    string, an integer past a double, a lone surrogate, anything that is no JSON type."""
    if value is None or isinstance(value, bool | float):
        return  # NaN and infinity: json.dumps refuses them (allow_nan=False)
    if isinstance(value, int):
        _integer(str(value))
    elif isinstance(value, str):
        value.encode("utf-8")
    elif isinstance(value, list | tuple):
        for item in value:
            _check_value(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"an object key is not a string ({type(key).__name__})")
            key.encode("utf-8")
            _check_value(item)
    else:
        raise TypeError(f"a {type(value).__name__} is not a JSON value")


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A value a later duplicate key replaces is not in the payload emit_line checks, yet the
    # reader refuses the whole line when it is no JSON: it is checked here.
    kept = dict(pairs)
    if len(kept) < len(pairs):
        for key, item in pairs:
            if kept[key] is not item:
                _check_value(item)
    return kept


def _finite(digits: str) -> float:
    # 1e400 is a JSON number no double holds; the reader refuses it, so does this.
    value = float(digits)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {digits[:40]} is out of a double's range")
    return value


def _no_constant(name: str) -> Any:
    # NaN, Infinity and -Infinity are not JSON; the standard library would accept them.
    raise ValueError(f"{name} is not a JSON value")


def emit(
    events_file: Path,
    topic: str,
    payload: str | None = None,
    *,
    as_json: bool = False,
    at: datetime | None = None,
) -> bytes:
    """Append one line to ``events_file``; return it. ``as_json``: ``payload`` is JSON text,
    kept structured; otherwise it is text (or null when omitted). See :func:`emit_value`."""
    return emit_value(events_file, topic, _payload(payload, as_json), at)


def emit_value(
    events_file: Path,
    topic: str,
    value: Any,
    at: datetime | None = None,
    *,
    max_bytes: int | None = None,
) -> bytes:
    """Append the line of ``topic`` and ``value`` (any JSON value) to ``events_file``; return
    it. ``max_bytes``: the most the line may take, newline included (ralph's MCP server keeps
    an invocation within the run's intake limits with it).

    Raises :class:`EmitError` for bad input or a failed write, and
    :class:`~pipeline.handlers.intake.UnsafeFileError` when the events file is a link, a FIFO
    or no regular file; nothing is written then."""
    line = emit_line(topic, value, at)
    if max_bytes is not None and len(line) > max_bytes:
        raise EmitError(f"the line would be {len(line)} bytes, over the {max_bytes} it may take")
    try:
        events_file.parent.mkdir(parents=True, exist_ok=True)
        fd = open_regular(events_file, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    except UnsafeFileError:
        raise  # a link or a FIFO where the events file should be: the caller says so
    except OSError as error:
        raise _failed(f"cannot open {events_file}", error) from error
    try:
        # Emitters take turns, so none sees another's line half written and ends it early.
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if _unfinished(fd, size):
            # Another writer left its line unfinished: end it, or this line would join it.
            line = b"\n" + line
        written = os.write(fd, line)
        if written != len(line):
            # A regular file takes a whole small write; a short one means a full disk. Taken
            # back while the lock is held, so no reader or writer finds half a line.
            os.ftruncate(fd, size)
            raise DiskFullError(
                f"cannot write {events_file}: the disk is full (only {written} of "
                f"{len(line)} bytes went in; they were taken back)"
            )
    except OSError as error:
        raise _failed(f"cannot write {events_file}", error) from error
    finally:
        os.close(fd)
    return line


def _unfinished(fd: int, size: int) -> bool:
    """Whether the file of ``fd``, ``size`` bytes long, ends in a line without its newline."""
    return bool(size) and os.pread(fd, 1, size - 1) != b"\n"


def end_unfinished_line(events_file: Path) -> None:
    """End the last line of ``events_file`` where a writer left it without its newline.

    Called once an invocation's agent (its whole process group) has exited: what it wrote is
    its own and complete, read now as its topic or a malformed line, judged by its turn (its
    hat's scope, a file-only turn), never folded into the next turn when that one's first
    ``ralph emit`` ends it. Nothing when the file is missing, unsafe (the reader says so) or
    ends in a newline; a write that fails leaves the line to the reader as before."""
    try:
        fd = open_regular(events_file, os.O_RDWR | os.O_APPEND)
    except (OSError, UnsafeFileError):
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if _unfinished(fd, size):
            os.write(fd, b"\n")
    except OSError:
        pass
    finally:
        os.close(fd)


def _failed(what: str, error: OSError) -> EmitError:
    """The error of a failed open or write: :class:`DiskFullError` when there was no room."""
    if error.errno in _NO_ROOM:
        return DiskFullError(f"{what}: the disk is full ({error.strerror})")
    return EmitError(f"{what}: {error.strerror}")
