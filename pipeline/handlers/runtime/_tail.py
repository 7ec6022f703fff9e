"""The end of a check's output, as much as the next prompt needs, and the cap on the log that
keeps it (I/O: reads, and shortens, one log file).

unittest and pytest print the failing test's name and assertion above their closing summary,
so a handful of lines keeps only the summary. The tail is the last :data:`TAIL_LINES` lines,
at most :data:`TAIL_BYTES` bytes, cut at a line boundary; a last line longer than that keeps
its end, marked with :data:`CUT_MARK` (a check that prints one huge line still shows how it
ended). The full log's path goes with it.

A check's log (a gate's, a hook's, the final validation's) is capped once the check has ended
(:func:`cap_log`): past :data:`LOG_CAP_BYTES` it keeps its first :data:`LOG_HEAD_BYTES` and
its last bytes, with a line between them saying how many bytes were dropped. The digest the
facts record is still that of the whole output, as the check printed it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

__all__ = [
    "CUT_MARK",
    "LOG_CAP_BYTES",
    "LOG_HEAD_BYTES",
    "TAIL_BYTES",
    "TAIL_LINES",
    "cap_log",
    "last_bytes",
    "output_tail",
]

TAIL_LINES: Final = 40
"""The most lines of a failed check's output given to the next agent."""
TAIL_BYTES: Final = 4096
"""The most bytes of them."""
CUT_MARK: Final = "[cut] …"
"""What stands before a last line whose start did not fit in :data:`TAIL_BYTES`."""

LOG_CAP_BYTES: Final = 4 << 20
"""The most bytes a check's log keeps (4 MiB): a runaway test suite's output is kept whole up
to here, and its start and end beyond it."""
LOG_HEAD_BYTES: Final = 1 << 20
"""How much of the start a capped log keeps (1 MiB); the rest of the cap is its end."""


def output_tail(log: Path) -> str:
    """The last lines of ``log`` (empty when it cannot be read), trailing blanks dropped."""
    data, cut = last_bytes(log, TAIL_BYTES)
    return _tail_of(data, cut=cut)


def last_bytes(log: Path, limit: int) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of ``log``, and whether they are not all of it (nothing when
    it cannot be read)."""
    try:
        with log.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            start = max(0, size - limit)
            handle.seek(start)
            return handle.read(), start > 0
    except OSError:
        return b"", False


def _tail_of(data: bytes, *, cut: bool) -> str:
    """The tail of the output whose last bytes are ``data`` (``cut``: not the whole output)."""
    if cut:
        # A cut through a character: start at the next whole one.
        skip = 0
        while skip < min(len(data), 3) and data[skip] & 0xC0 == 0x80:
            skip += 1
        data = data[skip:]
    lines = data.decode("utf-8", "replace").rstrip().splitlines()
    if cut and lines:
        # The first line was cut by the byte limit: dropped, unless it is the only one (its
        # end is then what says how the check ended).
        lines = lines[1:] if len(lines) > 1 else [f"{CUT_MARK}{lines[0]}"]
    return "\n".join(lines[-TAIL_LINES:])


def cap_log(log: Path, cap: int = LOG_CAP_BYTES, head: int = LOG_HEAD_BYTES) -> int:
    """Shorten ``log`` in place to at most ``cap`` bytes when it is longer: its first ``head``
    bytes, a line saying how many bytes were dropped, and its last bytes. Returns the number
    of bytes dropped (0: the log was within the cap, or is no regular file ralph may write,
    which is left alone: never written through a link)."""
    try:
        fd = os.open(log, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return 0
    try:
        info = os.fstat(fd)
        size = info.st_size
        if not stat.S_ISREG(info.st_mode) or size <= cap:
            return 0
        # The note's length depends on the count it gives: sized for the largest count.
        room = cap - head - len(_note(size, cap, head))
        dropped = size - head - room
        tail = os.pread(fd, room, size - room)
        kept = _note(dropped, cap, head) + tail
        written = os.pwrite(fd, kept, head)
        os.ftruncate(fd, head + written)
        return dropped
    except OSError:
        return 0
    finally:
        os.close(fd)


def _note(dropped: int, cap: int, head: int) -> bytes:
    """The line a capped log holds where its middle was."""
    return (
        f"\n[ralph: {dropped} bytes of output dropped here: the log keeps its first "
        f"{head} bytes and its end, at most {cap} bytes in all]\n"
    ).encode()
