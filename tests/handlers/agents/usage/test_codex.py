"""The ``codex-json`` usage parser: output captured from the pinned Codex parses to the
server's figures, and no output makes it raise."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents import OUTPUT_FORMATS
from pipeline.core.agents.codex import parse_codex
from pipeline.handlers.agents.usage import UsageFigures, read_usage

FIXTURES = Path(__file__).parents[3] / "fixtures" / "agent_output" / "codex"


def _lines(name: str) -> list[bytes]:
    return (FIXTURES / name).read_bytes().splitlines(keepends=True)


def test_a_working_invocation_reports_the_servers_figures() -> None:
    """Three model requests (input 1200 + 300 + 150 uncached, cache reads 0 + 1100 + 1400,
    output 40 + 60 + 12) are one turn whose input excludes the cached tokens."""
    assert parse_codex(_lines("working.jsonl")) == UsageFigures(
        input_tokens=1650,
        output_tokens=112,
        cache_read_tokens=2500,
        cache_write_tokens=0,
        turns=1,
        session_id="01a209f0-550b-7503-a2b2-2e150cee7421",
    )


def test_a_rate_limited_invocation_reports_its_session_but_no_usage() -> None:
    """A turn that failed reports no usage: nothing is made up, the thread id is kept."""
    figures = parse_codex(_lines("rate-limited.jsonl"))
    assert figures == UsageFigures(session_id="01a209f0-58d7-7b42-8506-25cb8be5f902")
    assert not figures.reported_anything


def test_turns_and_their_usage_add_up_and_cache_writes_are_not_input() -> None:
    """Each turn.completed is a turn; its cache writes and reads are taken off the input."""
    lines = [
        b'{"type":"thread.started","thread_id":"t-1"}\n',
        b'{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":30,'
        b'"cache_write_input_tokens":20,"output_tokens":7}}\n',
        b'{"type":"thread.started","thread_id":"t-2"}\n',
        b'{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":1}}\n',
        b'{"type":"turn.completed","usage":{"input_tokens":true,"output_tokens":-5}}\n',
        b'{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":',
    ]
    assert parse_codex(lines) == UsageFigures(
        input_tokens=60,
        output_tokens=8,
        cache_read_tokens=30,
        cache_write_tokens=20,
        turns=3,
        session_id="t-1",
    )


def test_the_codex_json_format_reads_a_log_file(tmp_path: Path) -> None:
    """``output_format = "codex-json"`` reads a log through this parser."""
    assert OUTPUT_FORMATS["codex-json"].usage is parse_codex
    log = tmp_path / "invocation.log"
    log.write_bytes((FIXTURES / "working.jsonl").read_bytes())
    assert read_usage("codex-json", log).output_tokens == 112


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)
_USAGE_KEYS = st.sampled_from(
    ["input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens"]
)
_EVENT = st.fixed_dictionaries(
    {"type": st.sampled_from(["thread.started", "turn.completed", "turn.failed", "error"])},
    optional={"thread_id": _JSON, "usage": _JSON | st.dictionaries(_USAGE_KEYS, _JSON)},
)


def _encoded(value: object) -> bytes:
    # The standard library writes integers of any size, which orjson would refuse to.
    return json.dumps(value).encode() + b"\n"


@given(st.lists(st.binary() | _JSON.map(_encoded) | _EVENT.map(_encoded), max_size=12))
def test_no_output_makes_the_parser_raise(lines: list[bytes]) -> None:
    """Arbitrary bytes, arbitrary JSON and events with fields of any type are skipped or
    read; the figures are never negative."""
    figures = parse_codex(lines)
    for value in (figures.input_tokens, figures.output_tokens, figures.cache_read_tokens):
        assert value is None or value >= 0


@given(st.integers(min_value=0, max_value=2000))
def test_a_log_cut_anywhere_never_makes_the_parser_raise(cut: int) -> None:
    """A truncated log (the agent killed mid-line) parses to what its complete lines say."""
    data = (FIXTURES / "working.jsonl").read_bytes()[:cut]
    figures = parse_codex(data.splitlines(keepends=True))
    assert figures.turns in (None, 1)
