"""The end of a check's output given to the next agent, and the cap on a check's log: the
tail always holds the end of the output (a cut last line included), and a capped log keeps
its start and its end with a note of what was dropped between them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.handlers.runtime import (
    CUT_MARK,
    LOG_CAP_BYTES,
    LOG_HEAD_BYTES,
    TAIL_BYTES,
    TAIL_LINES,
    cap_log,
    output_tail,
)


def _log(tmp_path: Path, data: bytes) -> Path:
    log = tmp_path / "gate.log"
    log.write_bytes(data)
    return log


def test_one_line_longer_than_the_tail_keeps_its_end_marked_as_cut(tmp_path: Path) -> None:
    """One line past :data:`TAIL_BYTES` (before: an empty tail): its last bytes, marked."""
    log = _log(tmp_path, b"x" * 100_000 + b" FAILED: 3 tests\n")
    tail = output_tail(log)
    assert tail.startswith(CUT_MARK)
    assert tail.endswith("x FAILED: 3 tests")
    assert len(tail.encode()) <= TAIL_BYTES + len(CUT_MARK.encode())


def test_a_long_last_line_after_short_ones_keeps_its_end(tmp_path: Path) -> None:
    """Short lines, then a last line past the limit: only that line's end, marked."""
    log = _log(tmp_path, b"collected 3 items\n" * 10 + b"E" * 10_000 + b" boom")
    assert output_tail(log) == CUT_MARK + "E" * (TAIL_BYTES - len(" boom")) + " boom"


def test_a_cut_first_line_is_dropped_when_whole_lines_follow(tmp_path: Path) -> None:
    """Whole lines in the window: the one the byte limit cut is left out, as before."""
    log = _log(tmp_path, b"y" * 5000 + b"\nsecond\nthird\n")
    assert output_tail(log) == "second\nthird"


def test_the_tail_holds_at_most_its_lines(tmp_path: Path) -> None:
    """Many short lines: the last :data:`TAIL_LINES` of them, none cut."""
    log = _log(tmp_path, b"".join(b"line %d\n" % n for n in range(200)))
    assert output_tail(log).splitlines() == [f"line {n}" for n in range(200 - TAIL_LINES, 200)]


def test_a_character_cut_by_the_limit_is_not_shown_broken(tmp_path: Path) -> None:
    """The window starts inside a multi-byte character: the tail starts at the next one."""
    log = _log(tmp_path, "é".encode() * 5000)
    tail = output_tail(log)
    assert "\ufffd" not in tail
    assert tail.removeprefix(CUT_MARK) == "é" * (TAIL_BYTES // 2)


def test_a_log_within_the_cap_is_left_as_it_is(tmp_path: Path) -> None:
    """Nothing dropped, not a byte changed."""
    data = os.urandom(1000)
    log = _log(tmp_path, data)
    assert cap_log(log, cap=1000, head=100) == 0
    assert log.read_bytes() == data


def test_a_capped_log_keeps_its_start_its_end_and_says_what_was_dropped(tmp_path: Path) -> None:
    """Past the cap: the first ``head`` bytes, a note naming the bytes dropped, the last
    bytes; the whole at most the cap."""
    data = b"".join(b"%08d\n" % n for n in range(10_000))  # 90,000 bytes
    log = _log(tmp_path, data)
    dropped = cap_log(log, cap=10_000, head=2_000)
    kept = log.read_bytes()
    assert len(kept) <= 10_000
    assert kept.startswith(data[:2_000])
    note = f"\n[ralph: {dropped} bytes of output dropped here".encode()
    assert kept[2_000:].startswith(note)
    end = kept[kept.index(b"]\n", 2_000) + 2 :]
    assert data.endswith(end)
    assert 2_000 + dropped + len(end) == len(data)
    assert output_tail(log).splitlines()[-1] == "00009999"


def test_the_default_cap(tmp_path: Path) -> None:
    """A check's log is kept whole up to :data:`LOG_CAP_BYTES` (4 MiB), its start
    :data:`LOG_HEAD_BYTES` (1 MiB) beyond."""
    log = _log(tmp_path, b"a" * LOG_HEAD_BYTES + b"b" * (2 * LOG_CAP_BYTES) + b"c" * 100)
    assert cap_log(log) > LOG_CAP_BYTES
    kept = log.read_bytes()
    assert len(kept) <= LOG_CAP_BYTES
    assert kept[:LOG_HEAD_BYTES] == b"a" * LOG_HEAD_BYTES
    assert kept.endswith(b"b" * 1000 + b"c" * 100)


def test_a_link_in_place_of_the_log_is_never_written_through(tmp_path: Path) -> None:
    """The log replaced by a symbolic link to another file: that file is left whole."""
    target = _log(tmp_path, b"z" * 50_000)
    link = tmp_path / "linked.log"
    link.symlink_to(target)
    assert cap_log(link, cap=1_000, head=100) == 0
    assert target.read_bytes() == b"z" * 50_000


@settings(max_examples=50, deadline=None)
@given(
    data=st.binary(max_size=6_000),
    cap=st.integers(min_value=400, max_value=3_000),
    head=st.integers(min_value=0, max_value=200),
)
def test_capping_keeps_the_end_and_never_exceeds_the_cap(
    tmp_path_factory: pytest.TempPathFactory, data: bytes, cap: int, head: int
) -> None:
    """For any output: the capped log is at most the cap, starts with the output's first
    ``head`` bytes and ends with the output's last bytes, and what it dropped adds up."""
    folder = tmp_path_factory.mktemp("cap")
    log = _log(folder, data)
    dropped = cap_log(log, cap=cap, head=head)
    kept = log.read_bytes()
    if len(data) <= cap:
        assert (dropped, kept) == (0, data)
        return
    assert len(kept) <= cap
    assert kept.startswith(data[:head])
    end = kept[kept.index(b"]\n", head) + 2 :]
    assert data.endswith(end)
    assert head + dropped + len(end) == len(data)
