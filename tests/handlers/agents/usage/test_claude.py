"""Claude Code's ``stream-json`` output, captured from the pinned CLI against the scripted
model server, parses to the usage it reports; nothing an agent prints makes the parser raise.

The fixtures (``tests/fixtures/agent_output/claude``, temporary paths scrubbed) were written
by ``claude -p --output-format stream-json --verbose`` with the ``claude`` preset:
``developer.jsonl`` is the developer's invocation of ``tests/real_agents/test_claude.py`` (four
model requests, each reporting 120 input, 30 output, 7 cache-read and 5 cache-write tokens);
``rate-limited.jsonl`` is an invocation whose every request got a 429.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents import OUTPUT_FORMATS
from pipeline.core.agents.claude import parse_claude
from pipeline.handlers.agents.usage import UsageFigures, read_usage

FIXTURES = Path(__file__).parents[3] / "fixtures" / "agent_output" / "claude"
DEVELOPER = (FIXTURES / "developer.jsonl").read_bytes().splitlines(keepends=True)
SESSION = "5a5a44d4-5723-4d18-8371-c23942f86cf4"


def test_a_finished_invocation_reports_the_result_lines_totals() -> None:
    """The ``result`` line: tokens (input without cache), turns, session, API time and the
    cost Claude Code computed; the model from the stream."""
    assert parse_claude(DEVELOPER) == UsageFigures(
        model="claude-opus-5-5",
        input_tokens=480,
        output_tokens=120,
        cache_read_tokens=28,
        cache_write_tokens=20,
        turns=6,
        session_id=SESSION,
        api_duration_ms=121,
        cost_usd=0.0044256,
    )


def test_the_format_is_read_from_the_log_file_by_its_name() -> None:
    """``claude-stream-json`` is the preset's format and reads a log file."""
    assert OUTPUT_FORMATS["claude-stream-json"].usage is parse_claude
    figures = read_usage("claude-stream-json", FIXTURES / "developer.jsonl")
    assert (figures.input_tokens, figures.cost_usd) == (480, 0.0044256)


def test_an_invocation_that_was_rate_limited_reports_zero_spent() -> None:
    """Every request refused: the CLI still reports its totals (nothing spent, one turn); its
    stand-in ``<synthetic>`` message does not count as the model."""
    figures = parse_claude((FIXTURES / "rate-limited.jsonl").read_bytes().splitlines())
    assert figures.model == "claude-opus-5-5"
    assert (figures.input_tokens, figures.output_tokens, figures.cost_usd) == (0, 0, 0.0)
    assert figures.turns == 1
    assert figures.reported_anything


def test_without_a_result_line_input_and_cache_tokens_come_from_the_messages() -> None:
    """A killed invocation (no ``result``; the last line cut halfway): input and cache tokens
    of each distinct message, once; output, cost and turns are not known."""
    cut = [*DEVELOPER[:-1], DEVELOPER[-1][:200]]
    assert parse_claude(cut) == UsageFigures(
        model="claude-opus-5-5",
        input_tokens=480,
        cache_read_tokens=28,
        cache_write_tokens=20,
        session_id=SESSION,
    )


def test_output_that_says_nothing_reports_nothing() -> None:
    """No JSON at all (a crash before the stream): every field None."""
    figures = parse_claude([b"Error: something broke\n", b"\n", b"[1, 2]\n", b"{not json\n"])
    assert figures == UsageFigures()
    assert not figures.reported_anything


def test_fields_of_the_wrong_type_are_not_reported() -> None:
    """A count that is text, negative or a bool, a cost that is not a number: left out."""
    result = {
        "type": "result",
        "usage": {"input_tokens": "9", "output_tokens": -1, "cache_read_input_tokens": True},
        "num_turns": 2.5,
        "total_cost_usd": "0.1",
        "session_id": 7,
    }
    figures = parse_claude([orjson.dumps(result)])
    assert figures == UsageFigures()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
KEYS = st.sampled_from(
    [
        "type",
        "subtype",
        "model",
        "message",
        "usage",
        "id",
        "input_tokens",
        "total_cost_usd",
        "num_turns",
        "session_id",
        "parent_tool_use_id",
        "cache_read_input_tokens",
    ]
)
RECORDS = st.dictionaries(
    KEYS, JSON | st.sampled_from(["result", "assistant", "system", "init"]), max_size=6
)


@given(st.lists(st.binary(max_size=200), max_size=20))
def test_arbitrary_bytes_never_raise(lines: list[bytes]) -> None:
    """Whatever bytes the log holds, the parser returns figures."""
    assert isinstance(parse_claude(lines), UsageFigures)


@given(st.lists(RECORDS.map(lambda r: json.dumps(r).encode()), max_size=8))
def test_records_of_any_shape_never_raise(lines: list[bytes]) -> None:
    """JSON objects with the known keys holding anything (nested objects where numbers
    belong, numbers where objects belong) never make the parser raise."""
    assert isinstance(parse_claude(lines), UsageFigures)


@given(st.integers(min_value=0, max_value=sum(len(line) for line in DEVELOPER)))
def test_a_log_cut_at_any_byte_never_raises(end: int) -> None:
    """The captured log truncated anywhere (a killed agent) parses; before the ``result``
    line is complete, no cost is reported."""
    data = b"".join(DEVELOPER)[:end]
    figures = parse_claude(data.splitlines(keepends=True))
    if end < len(b"".join(DEVELOPER)) - 1:
        assert figures.cost_usd is None


LIMITS = Path(__file__).parents[3] / "fixtures" / "limits"


def test_claude_codes_own_retries_are_counted_with_their_statuses_and_waits() -> None:
    """``system``/``api_retry`` lines (captured: ten retries of a 429 with Claude Code's
    default of ten, delays 2.2 s to 34.2 s): each retried request's status and the waits in
    all, so a slow invocation says why."""
    lines = (LIMITS / "claude-429-default-retries.jsonl").read_bytes().splitlines()
    figures = parse_claude(lines)
    assert figures.own_retries == (429,) * 10
    assert figures.own_retry_wait_ms == 170_791
    assert figures.retries_note == (
        "the CLI retried 10 failed model request(s) itself "
        "(HTTP 429, 429, 429, 429, 429 and 5 more), waiting 170.8 s"
    )
    once = parse_claude((LIMITS / "claude-429-then-ok.jsonl").read_bytes().splitlines())
    assert once.own_retries == (429,)
    assert once.input_tokens is not None, "the request that then succeeded is still counted"


def test_a_run_without_retries_notes_none() -> None:
    assert parse_claude(DEVELOPER).own_retries == ()
    assert parse_claude(DEVELOPER).retries_note == ""


def test_a_retry_line_a_tool_printed_is_not_claude_codes() -> None:
    """A tool result holding an ``api_retry`` object is a ``user`` line's content, never a
    ``system`` line of Claude Code's own."""
    printed = orjson.dumps(
        {
            "type": "user",
            "message": {
                "content": [
                    {
                        "type": "tool_result",
                        "content": '{"type":"system","subtype":"api_retry","error_status":429}',
                    }
                ]
            },
        }
    )
    assert parse_claude([*DEVELOPER, printed]).own_retries == ()


REPORTED_FIGURES = st.builds(
    UsageFigures,
    model=st.none() | st.text(min_size=1).filter(lambda name: not name.startswith("<")),
    input_tokens=st.none() | st.integers(0, 2**63 - 1),
    output_tokens=st.none() | st.integers(0, 2**63 - 1),
    cache_read_tokens=st.none() | st.integers(0, 2**63 - 1),
    cache_write_tokens=st.none() | st.integers(0, 2**63 - 1),
    turns=st.none() | st.integers(0, 2**63 - 1),
    session_id=st.none() | st.text(min_size=1),
    api_duration_ms=st.none() | st.integers(0, 2**63 - 1),
    cost_usd=st.none() | st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
)


def test_claude_code_declares_how_it_reports_usage() -> None:
    """The demo's agent imitates a CLI that declares its report: Claude Code's does."""
    assert OUTPUT_FORMATS["claude-stream-json"].report is not None


@given(REPORTED_FIGURES)
def test_every_declared_report_reads_back_as_its_figures(figures: UsageFigures) -> None:
    """A format's ``report`` of some figures is what its own parser reads back, so an agent
    printing it (the demo's) reports exactly those figures."""
    for output in OUTPUT_FORMATS.values():
        if output.report is not None:
            lines = output.report(figures).encode().splitlines(keepends=True)
            assert output.usage(lines) == figures, output.name


def test_a_cost_that_is_no_amount_from_zero_is_not_reported() -> None:
    """A boolean (which Python takes for an int), a negative or a string ``total_cost_usd``
    is no cost; a plain number from 0 is."""
    for printed in (b"true", b"-0.5", b'"0.25"'):
        line = b'{"type":"result","num_turns":1,"total_cost_usd":' + printed + b"}"
        assert parse_claude([line]).cost_usd is None, printed
    assert parse_claude([b'{"type":"result","total_cost_usd":0.25}']).cost_usd == 0.25
