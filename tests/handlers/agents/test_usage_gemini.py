"""Gemini CLI's stream-json output, captured from the real CLI (0.61.0) against the scripted
model server, parses to the figures the server reported; no line, however broken, makes the
parser raise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents import OUTPUT_FORMATS
from pipeline.core.agents.gemini import parse_gemini
from pipeline.handlers.agents.usage import UsageFigures, read_usage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "agent_output" / "gemini"


def lines_of(name: str) -> list[bytes]:
    """The fixture's lines as the runtime's log holds them (newlines kept)."""
    return (FIXTURES / name).read_bytes().splitlines(keepends=True)


def test_a_developer_invocation_of_a_ralph_run() -> None:
    """``ralph run``'s developer log (stderr warnings merged in): four model requests, each
    reported by the server as 1000+10*turn fresh and 3000 cached input tokens and 50+turn
    output tokens; ``input`` is the fresh tokens, ``cached`` the cache reads."""
    figures = read_usage("gemini-stream-json", FIXTURES / "developer.log")
    assert figures == UsageFigures(
        model="gemini-2.5-flash",
        input_tokens=1000 + 1010 + 1020 + 1030,
        output_tokens=50 + 51 + 52 + 53,
        cache_read_tokens=4 * 3000,
        cache_write_tokens=None,
        turns=4,
        session_id="be5668ae-5327-4e28-b664-2f28c7905591",
        api_duration_ms=1396,
        cost_usd=None,
    )


def test_parallel_function_calls_are_one_turn() -> None:
    """Two function calls in one answer print two ``tool_use`` lines before their results:
    one model turn; three requests in all (1200+300+100 fresh, 800+2000+2100 cached)."""
    figures = parse_gemini(lines_of("parallel-calls.log"))
    assert figures.turns == 3
    assert (figures.input_tokens, figures.cache_read_tokens) == (1600, 4900)
    assert figures.output_tokens == 85
    assert figures.cost_usd is None


def test_a_rate_limit_retried_inside_the_cli() -> None:
    """A 429 the CLI retried by itself (its notice on stderr) leaves the figures of the
    answered requests; the wall time includes the wait."""
    figures = parse_gemini(lines_of("rate-limited-then-ok.log"))
    assert figures.turns == 3
    assert figures.input_tokens == 1600
    assert figures.api_duration_ms == 6087


def test_a_request_that_failed_every_attempt() -> None:
    """Ten 500s in a row (the CLI's own retries, its stack traces on stderr), then a ``result``
    with ``status: error``: no tokens were used, no model turn answered, the duration is 0
    (unknown), and the figures say so rather than nothing."""
    figures = parse_gemini(lines_of("server-error.log"))
    assert (figures.input_tokens, figures.output_tokens, figures.cache_read_tokens) == (0, 0, 0)
    assert figures.turns == 0
    assert figures.api_duration_ms is None
    assert figures.model == "gemini-2.5-flash"


def test_an_input_count_without_input_is_computed_from_the_cached() -> None:
    """Should ``input`` be missing, the fresh tokens are ``input_tokens`` minus ``cached``."""
    result = {"type": "result", "stats": {"input_tokens": 130, "cached": 30, "output_tokens": 5}}
    figures = parse_gemini([orjson.dumps(result)])
    assert (figures.input_tokens, figures.cache_read_tokens, figures.output_tokens) == (100, 30, 5)
    assert figures.turns == 0


def test_with_auto_routing_the_busiest_model_is_named() -> None:
    """``init`` says ``auto`` when Gemini CLI chooses the model per request; the model that
    used the most tokens is named then."""
    lines = [
        orjson.dumps({"type": "init", "session_id": "s", "model": "auto"}),
        orjson.dumps(
            {
                "type": "result",
                "status": "success",
                "stats": {
                    "input_tokens": 900,
                    "input": 900,
                    "cached": 0,
                    "output_tokens": 90,
                    "duration_ms": 0,
                    "models": {
                        "gemini-3.5-flash-lite": {"total_tokens": 120},
                        "gemini-3.1-pro-preview": {"total_tokens": 870},
                    },
                },
            }
        ),
    ]
    figures = parse_gemini(lines)
    assert figures.model == "gemini-3.1-pro-preview"
    assert figures.api_duration_ms is None
    assert figures.session_id == "s"


def test_an_invocation_that_printed_no_result_reports_no_tokens() -> None:
    """Killed before its ``result`` line: the session and model are known, the tokens not."""
    figures = parse_gemini(lines_of("developer.log")[:8])
    assert figures.session_id == "be5668ae-5327-4e28-b664-2f28c7905591"
    assert figures.model == "gemini-2.5-flash"
    assert (figures.input_tokens, figures.output_tokens, figures.turns) == (None, None, 1)


def test_the_format_is_registered() -> None:
    """``output_format = "gemini-stream-json"`` reads with this parser."""
    assert OUTPUT_FORMATS["gemini-stream-json"].usage is parse_gemini


def test_the_preset_reads_its_usage_with_this_parser() -> None:
    """The gemini preset prints stream-json and names this format."""
    from pipeline.core.config import PRESETS

    preset = PRESETS["gemini"]
    assert preset.output_format == "gemini-stream-json"
    assert preset.argv[preset.argv.index("--output-format") + 1] == "stream-json"


JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
KNOWN_TYPES = st.sampled_from(["init", "message", "tool_use", "tool_result", "result", "error"])


@st.composite
def plausible_lines(draw: st.DrawFn) -> bytes:
    """A JSON object of a known type whose fields hold anything at all."""
    event = draw(st.dictionaries(st.sampled_from(["stats", "model", "session_id", "role"]), JSON))
    event["type"] = draw(KNOWN_TYPES)
    if draw(st.booleans()):
        event["stats"] = draw(
            st.dictionaries(
                st.sampled_from(
                    ["input_tokens", "cached", "input", "output_tokens", "duration_ms", "models"]
                ),
                JSON,
            )
        )
    return orjson.dumps(event)


@given(st.lists(st.binary() | plausible_lines(), max_size=12))
def test_arbitrary_lines_never_raise(lines: list[bytes]) -> None:
    """Bytes or objects of known types with fields of any shape: figures, never an error,
    and every count that is reported is a non-negative integer."""
    figures = parse_gemini(lines)
    for value in (figures.input_tokens, figures.output_tokens, figures.cache_read_tokens):
        assert value is None or (type(value) is int and value >= 0)


@pytest.mark.parametrize(
    "name", ["developer.log", "parallel-calls.log", "rate-limited-then-ok.log", "server-error.log"]
)
@given(cut=st.integers(min_value=0, max_value=20_000))
def test_a_truncated_log_never_raises(name: str, cut: int) -> None:
    """A log cut at any byte (the agent killed mid-line) parses, and claims tokens exactly
    when its ``result`` line is whole."""
    raw = (FIXTURES / name).read_bytes()
    start = raw.rindex(b'{"type":"result"')
    end = raw.find(b"\n", start) % (len(raw) + 1)
    cut = min(cut, len(raw))
    figures = parse_gemini(raw[:cut].splitlines(keepends=True))
    assert (figures.input_tokens is not None) == (cut >= end)
