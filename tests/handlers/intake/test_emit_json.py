"""``ralph emit --json`` encodes with the standard library and the reader decodes with orjson:
whatever JSON text an agent passes, emit writes it exactly when orjson can read it, and the
reader reads back the same value; anything else is refused before a byte is written."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.handlers.intake import AgentLine, EmitError, emit, emit_line, parse_lines
from tests.handlers.intake.test_whole_path import _VALUES

T0 = datetime(2026, 11, 26, tzinfo=UTC)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=_VALUES)
def test_emit_writes_exactly_what_the_reader_can_read(tmp_path: Path, raw: bytes) -> None:
    # An agent's argument arrives as text; bytes that are no UTF-8 arrive as surrogates.
    text = raw.decode("utf-8", "surrogateescape")
    events = tmp_path / "events.jsonl"
    events.unlink(missing_ok=True)
    try:
        expected = orjson.loads(raw)
    except orjson.JSONDecodeError:
        with pytest.raises(EmitError):
            emit(events, "t", text, as_json=True, at=T0)
        assert not events.exists() or events.read_bytes() == b""
        return
    emit(events, "t", text, as_json=True, at=T0)
    (record,) = parse_lines(events.read_bytes()).records
    assert isinstance(record, AgentLine)
    assert record.payload == expected


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "1e400"])
def test_non_finite_numbers_are_refused(tmp_path: Path, text: str) -> None:
    """The standard library would read and write them; JSON has no such numbers."""
    with pytest.raises(EmitError):
        emit(tmp_path / "events.jsonl", "t", text, as_json=True, at=T0)
    assert not (tmp_path / "events.jsonl").exists()


@pytest.mark.parametrize(
    ("payload", "why"),
    [
        (10**400, "too large"),
        ({1: "a"}, "key is not a string"),
        (T0, "datetime is not a JSON value"),
        (["\ud800"], "surrogates not allowed"),
        (float("nan"), "Out of range float"),
    ],
)
def test_a_payload_built_in_python_is_refused_unless_the_reader_reads_it_back(
    payload: object, why: str
) -> None:
    """What an in-process caller passes is checked as the agent's text is: nothing is
    encoded that the reader would refuse or read as something else."""
    with pytest.raises(EmitError, match=why):
        emit_line("t", payload, T0)


def test_an_integer_past_64_bits_is_written_and_read_back_as_the_reader_reads_it() -> None:
    (record,) = parse_lines(emit_line("t", {"n": 2**70}, T0)).records
    assert isinstance(record, AgentLine)
    assert record.payload == {"n": float(2**70)}


@given(
    at=st.datetimes(
        min_value=datetime(1971, 1, 1),
        max_value=datetime(9998, 12, 31),
        timezones=st.timezones(),
    )
)
def test_a_line_is_stamped_with_its_time_in_utc_to_the_millisecond(at: datetime) -> None:
    # emit formats the stamp with ``time``, not ``datetime``: it must say what isoformat says.
    stamp = orjson.loads(emit_line("t", None, at))["ts"]
    assert stamp == at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
