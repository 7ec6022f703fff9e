"""The incremental events-file reader: exact line accounting, partial lines, any bytes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from pipeline.handlers.intake import (
    AgentLine,
    EventsFileReader,
    MalformedLine,
    emit,
    parse_lines,
)


def test_valid_invalid_valid_gives_two_events_and_one_malformed_record(tmp_path: Path) -> None:
    """The malformed line keeps its number, its whole content and the JSON error."""
    path = tmp_path / "events.jsonl"
    emit(path, "build.start", "go")
    with path.open("ab") as handle:
        handle.write(b'{"topic": "broken", \n')
    emit(path, "build.done", '{"ok": true}', as_json=True)
    records = list(EventsFileReader(path=path).read())
    assert [type(r) for r in records] == [AgentLine, MalformedLine, AgentLine]
    first, bad, last = records
    assert isinstance(first, AgentLine)
    assert isinstance(last, AgentLine)
    assert (first.line_number, first.topic, first.payload) == (1, "build.start", "go")
    assert first.ts is not None
    assert first.ts.utcoffset() is not None
    assert isinstance(bad, MalformedLine)
    assert (bad.line_number, bad.content) == (2, '{"topic": "broken", ')
    assert bad.error.startswith("invalid JSON")
    assert (last.line_number, last.payload) == (3, {"ok": True})


def test_line_numbers_stay_right_across_reads_and_a_partial_line_waits(tmp_path: Path) -> None:
    """Reads pick up where they stopped; a line without its newline is read once complete."""
    path = tmp_path / "events.jsonl"
    reader = EventsFileReader(path=path)
    assert list(reader.read()) == []  # no file yet
    emit(path, "a", "1")
    path.open("ab").write(b"\n")  # a blank line: skipped, but it is line 2
    assert [r.line_number for r in reader.read()] == [1]
    with path.open("ab") as handle:
        handle.write(b'{"topic": "c", "pay')
    assert list(reader.read()) == []
    assert reader.lines_read == 2
    with path.open("ab") as handle:
        handle.write(b'load": 3}\n')
    emit(path, "d")
    again = list(reader.read())
    assert [(r.line_number, getattr(r, "topic", None)) for r in again] == [(3, "c"), (4, "d")]
    assert reader.offset == path.stat().st_size
    resumed = EventsFileReader(path=path, offset=reader.offset, lines_read=reader.lines_read)
    assert list(resumed.read()) == []  # a resumed reader re-reads nothing


def test_each_kind_of_bad_shape_is_named() -> None:
    """Not an object, no topic, a topic that is not a string or has bad characters, an
    unexpected key, a bad ts: each a malformed record saying so."""
    lines = [
        b"[1, 2]",
        b'{"payload": 1}',
        b'{"topic": 7}',
        b'{"topic": "a b"}',
        b'{"topic": "a", "extra": 1}',
        b'{"topic": "a", "ts": "yesterday"}',
        b'{"topic": "a", "ts": "2026-01-01T00:00:00"}',
    ]
    result = parse_lines(b"\n".join(lines) + b"\n")
    errors = [r.error for r in result.records if isinstance(r, MalformedLine)]
    assert len(errors) == len(lines)
    for error, expected in zip(
        errors,
        [
            "expected a JSON object",
            "missing topic",
            "not a string",
            "characters other",
            "unexpected key 'extra'",
            "RFC 3339",
            "RFC 3339",
        ],
        strict=True,
    ):
        assert expected in error


@given(st.lists(st.binary(max_size=60) | st.sampled_from([b"\n", b'{"topic":"t"}\n']), max_size=30))
def test_any_bytes_never_crash_and_every_complete_line_is_one_record(parts: list[bytes]) -> None:
    """Arbitrary bytes: every non-blank complete line is exactly one record, numbered by its
    physical line; the unterminated tail is left unread."""
    data = b"".join(parts)
    result = parse_lines(data)
    complete = data[: data.rfind(b"\n") + 1].split(b"\n")[:-1] if b"\n" in data else []
    expected = [n for n, line in enumerate(complete, 1) if line.strip()]
    assert [r.line_number for r in result.records] == expected
    assert result.lines == len(complete)
    assert result.consumed == sum(len(line) + 1 for line in complete)


@given(
    st.lists(st.binary(max_size=40) | st.just(b"\n") | st.just(b'{"topic":"x.y"}\n'), max_size=25),
    st.integers(min_value=1, max_value=17),
)
def test_reading_in_any_chunk_size_equals_reading_at_once(parts: list[bytes], chunk: int) -> None:
    """Chunked incremental reads give the records of one read of the whole file."""
    import tempfile

    data = b"".join(parts)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "events.jsonl"
        path.write_bytes(data)
        whole = list(EventsFileReader(path=path).read())
        chunked = list(EventsFileReader(path=path, chunk_bytes=chunk).read())
        # Appending in pieces and reading after each piece also gives the same records.
        path.write_bytes(b"")
        reader = EventsFileReader(path=path)
        stepwise: list[AgentLine | MalformedLine] = []
        for start in range(0, len(data), chunk):
            with path.open("ab") as handle:
                handle.write(data[start : start + chunk])
            stepwise.extend(reader.read())
    assert chunked == whole
    assert stepwise == whole


def test_a_structured_payload_stays_structured() -> None:
    """Objects and arrays come back as they were emitted."""
    line = orjson.dumps({"topic": "t", "payload": {"a": [1, {"b": None}]}}) + b"\n"
    (record,) = parse_lines(line).records
    assert isinstance(record, AgentLine)
    assert record.payload == {"a": [1, {"b": None}]}
    assert record.ts is None


_GOOD_TOPICS = st.sampled_from(["build.done", "a", "x:y-z_1"]) | st.lists(
    st.from_regex(r"[A-Za-z0-9_:-]{1,4}", fullmatch=True), min_size=1, max_size=3
).map(".".join)
_BAD_TOPICS = st.one_of(st.sampled_from(["bad topic", ""]), st.integers(), st.none())
_GOOD_STAMPS = st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=2)), timezone(-timedelta(hours=5))])
)
_BAD_STAMPS = st.one_of(
    st.datetimes().map(lambda d: d.isoformat()),  # no zone
    st.sampled_from(["soon", "2026-01-01", "2026-02-30T00:00:00Z", "2026-01-01T23:59:60Z"]),
    st.integers(),
)
_PAYLOADS = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@st.composite
def _event_like_lines(draw: st.DrawFn) -> tuple[bytes, dict[str, object], str | None]:
    """A line with at most one thing wrong, its object, and what the error must say (None:
    the line is valid): keys in any order, any kind of value, times in any RFC 3339 spelling."""
    obj: dict[str, object] = {"topic": draw(_GOOD_TOPICS)}
    if draw(st.booleans()):
        obj["payload"] = draw(_PAYLOADS)
    wrong = draw(st.sampled_from(["nothing", "time", "bad time", "extra key", "bad topic"]))
    expected = None
    if wrong in {"time", "bad time"}:
        stamp = draw(_GOOD_STAMPS)
        text = stamp.isoformat(sep=draw(st.sampled_from(["T", "t", " "])))
        obj["ts"] = text.replace("+00:00", "Z") if draw(st.booleans()) else text
        if wrong == "bad time":
            obj["ts"], expected = draw(_BAD_STAMPS), "RFC 3339"
    elif wrong == "extra key":
        obj[draw(st.sampled_from(["extra", "line_number", "Topic"]))] = 1
        expected = "unexpected key"
    elif wrong == "bad topic":
        obj["topic"] = draw(_BAD_TOPICS)
        expected = "topic"
    ordered = {key: obj[key] for key in draw(st.permutations(list(obj)))}
    return json.dumps(ordered).encode(), obj, expected


@given(_event_like_lines())
def test_each_line_is_read_as_its_content_says(
    line: tuple[bytes, dict[str, object], str | None],
) -> None:
    """A valid line gives its topic, payload and time; a line with one thing wrong is a
    malformed record naming it, with the line's whole content."""
    raw, obj, expected = line
    (record,) = parse_lines(raw + b"\n").records
    if expected is None:
        assert isinstance(record, AgentLine)
        assert (record.topic, record.payload) == (obj["topic"], obj.get("payload"))
        stamp = obj.get("ts")
        if stamp is None:
            assert record.ts is None
        else:
            assert isinstance(stamp, str)
            assert record.ts == datetime.fromisoformat(stamp.upper().replace(" ", "T"))
            assert record.ts is not None
            assert record.ts.tzinfo is not None
    else:
        assert isinstance(record, MalformedLine)
        assert expected in record.error
        assert record.content == raw.decode()
