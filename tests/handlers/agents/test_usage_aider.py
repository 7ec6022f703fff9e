"""aider's text output parses to the usage its ``Tokens:`` lines report (fixtures captured
from the pinned aider against the scripted model server)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents.aider import parse_aider
from pipeline.handlers.agents.usage import UsageFigures, read_usage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "agent_output" / "aider"


def test_a_priced_model_reports_tokens_and_the_session_cost() -> None:
    """1200 input + 300 cached tokens are "1.5k sent" (aider does not see OpenAI's cached
    count), 80 received; with prices known, the session's cost."""
    figures = read_usage("aider", FIXTURES / "run-priced.txt")
    assert figures == UsageFigures(
        model="openai/scripted",
        input_tokens=1500,
        output_tokens=80,
        cache_read_tokens=0,
        cache_write_tokens=0,
        turns=1,
        cost_usd=0.0038,
    )


def test_without_prices_no_cost_is_reported() -> None:
    """aider prints no ``Cost:`` for a model it has no prices for: the cost is unknown."""
    figures = read_usage("aider", FIXTURES / "run-unpriced.txt")
    assert (figures.input_tokens, figures.output_tokens, figures.cost_usd) == (1500, 80, None)


def test_cache_figures_are_taken_out_of_the_tokens_sent() -> None:
    """``sent`` includes the cache hits and writes; several messages add up; the last
    session cost (on its own line when both cache figures are shown) is the total."""
    lines = [
        b"Main model: anthropic/claude-x with diff edit format, infinite output\n",
        b"Tokens: 12k sent, 2.0k cache write, 9.5k cache hit, 1.2k received.\n",
        b"Cost: $0.01 message, $0.01 session.\n",
        b"\x1b[32mTokens: 900 sent, 15 received. Cost: $0.0021 message, $0.02 session.\x1b[0m\n",
    ]
    figures = parse_aider(lines)
    assert figures == UsageFigures(
        model="anthropic/claude-x",
        input_tokens=12_000 - 2_000 - 9_500 + 900,
        output_tokens=1_215,
        cache_read_tokens=9_500,
        cache_write_tokens=2_000,
        turns=2,
        cost_usd=0.02,
    )


def test_output_without_a_tokens_line_reports_no_usage() -> None:
    """aider that failed before its model answered says nothing about usage."""
    figures = parse_aider([b"Aider v0.86.2\n", b"litellm.APIConnectionError: refused\n"])
    assert not figures.reported_anything


_WORDS = st.sampled_from(
    ["Tokens:", "sent,", "received.", "cache", "hit,", "write,", "Cost:", "$0.1", "1.5k", "12"]
)


@given(
    st.lists(st.binary(max_size=60) | st.lists(_WORDS, max_size=8).map(" ".join).map(str.encode)),
    st.integers(0, 200),
)
def test_arbitrary_and_truncated_lines_never_raise(lines: list[bytes], cut: int) -> None:
    """Whatever aider printed, cut wherever: the parser answers, never raises."""
    text = (FIXTURES / "run-priced.txt").read_bytes() + b"\n".join(lines)
    figures = parse_aider(text[: len(text) - cut].splitlines(keepends=True))
    assert figures.input_tokens is None or figures.input_tokens >= 0
