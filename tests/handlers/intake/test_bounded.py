"""The bounded read of one invocation's lines: the same records as the plain reading within
the limits, whatever the chunking; past them, one record for the rest and the same position."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st

from pipeline.handlers.intake import IntakeLimits, MalformedLine, parse_lines, read_bounded

_PIECES = st.lists(
    st.one_of(
        st.binary(max_size=30),
        st.sampled_from([b'{"topic": "a.b", "payload": [1]}\n', b"\n", b"  \n", b"{bad\n"]),
        st.just(b'{"topic": "long", "payload": "' + b"x" * 60 + b'"}\n'),
    ),
    max_size=12,
)
_NO_LIMIT = IntakeLimits(lines=1 << 30, bytes=1 << 30, line_bytes=1 << 30)


@given(pieces=_PIECES, chunk=st.integers(1, 9))
def test_within_the_limits_any_chunking_reads_what_the_plain_reading_does(
    pieces: list[bytes], chunk: int
) -> None:
    """With limits never reached, the records, consumed bytes and lines equal
    ``parse_lines`` of the whole data, for chunks of any size (lines cross chunks)."""
    data = b"".join(pieces)
    bounded = read_bounded(io.BytesIO(data), 7, _NO_LIMIT, chunk)
    plain = parse_lines(data, 7)
    assert bounded.records == plain.records
    assert (bounded.consumed, bounded.lines) == (plain.consumed, plain.lines)


@given(
    pieces=_PIECES,
    chunk=st.integers(1, 9),
    lines=st.integers(1, 4),
    size=st.integers(1, 120),
    line=st.integers(1, 50),
)
def test_past_the_limits_one_record_sums_up_the_rest_and_the_position_is_the_same(
    pieces: list[bytes], chunk: int, lines: int, size: int, line: int
) -> None:
    """At most ``lines`` records plus one; every record of an over-long line or of the rest is
    a malformed line with at most 200 bytes of content; the position is the plain one."""
    data = b"".join(pieces)
    limits = IntakeLimits(lines=lines, bytes=size, line_bytes=line)
    bounded = read_bounded(io.BytesIO(data), 1, limits, chunk)
    plain = parse_lines(data, 1)
    assert (bounded.consumed, bounded.lines) == (plain.consumed, plain.lines)
    assert len(bounded.records) <= lines + 1
    numbers = [r.line_number for r in bounded.records]
    assert numbers == sorted(set(numbers))
    for record in bounded.records:
        if isinstance(record, MalformedLine) and "not read" in record.error:
            assert record is bounded.records[-1]
            assert len(record.content.encode()) <= 200 * 3
    if plain.records and not bounded.records:
        raise AssertionError("lines were written but no record says so")
