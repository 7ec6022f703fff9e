"""opencode's JSON events parse to the usage its steps report (fixtures captured from the
pinned opencode against the scripted model server)."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.agents.opencode import parse_opencode
from pipeline.handlers.agents.usage import UsageFigures, read_usage

FIXTURES = Path(__file__).parents[2] / "fixtures" / "agent_output" / "opencode"


def _lines(name: str) -> list[bytes]:
    return (FIXTURES / name).read_bytes().splitlines(keepends=True)


def test_steps_are_summed_and_an_unpriced_cost_of_zero_is_not_reported() -> None:
    """Three model requests (1200 + 1500 + 1500 input, 80 + 40 + 40 output, 300 + 1400 +
    1400 cached): summed; opencode's cost of 0 for a model without prices is no cost."""
    figures = read_usage("opencode-json", FIXTURES / "run-unpriced.jsonl")
    assert figures == UsageFigures(
        input_tokens=4200,
        output_tokens=160,
        cache_read_tokens=3100,
        cache_write_tokens=0,
        turns=3,
        session_id=figures.session_id,
        cost_usd=None,
    )
    assert figures.session_id is not None
    assert figures.session_id.startswith("ses_")


def test_a_priced_model_reports_its_cost() -> None:
    """With prices in opencode.json (2 / 10 / 0.5 USD per million input / output / cached
    tokens) the cost of the steps is summed."""
    figures = parse_opencode(_lines("run-priced.jsonl"))
    assert figures.cost_usd is not None
    assert abs(figures.cost_usd - (0.00335 + 2 * 0.0041)) < 1e-9
    assert (figures.input_tokens, figures.output_tokens, figures.turns) == (4200, 160, 3)


def test_reasoning_tokens_count_as_output() -> None:
    """opencode counts reasoning apart from output; both are billed as output."""
    step = {
        "type": "step_finish",
        "sessionID": "ses_x",
        "part": {
            "type": "step-finish",
            "tokens": {"input": 5, "output": 7, "reasoning": 11, "cache": {"read": 1, "write": 2}},
            "cost": 0.5,
        },
    }
    figures = parse_opencode([orjson.dumps(step)])
    assert (figures.output_tokens, figures.cache_write_tokens, figures.cost_usd) == (18, 2, 0.5)


def test_output_without_steps_reports_no_usage() -> None:
    """A run that failed before any model request says nothing about usage."""
    figures = parse_opencode([b'{"type":"error","sessionID":"ses_y","error":{}}\n', b"oops\n"])
    assert not figures.reported_anything
    assert figures.session_id == "ses_y"


def test_a_truncated_log_still_reads_its_complete_steps() -> None:
    """The last line cut anywhere: the steps before it still count."""
    data = (FIXTURES / "run-unpriced.jsonl").read_bytes()
    last = data.rstrip(b"\n").rfind(b"\n")
    figures = parse_opencode(data[: last + 40].splitlines(keepends=True))
    assert figures.turns == 2


def _dumps(value: object) -> bytes:
    """JSON as any writer may give it (integers beyond 64 bits, NaN)."""
    return json.dumps(value).encode()


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["type", "part", "tokens", "input", "output", "cache", "read", "cost", "sessionID"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@given(st.lists(st.binary(max_size=60) | _JSONISH.map(_dumps), max_size=12), st.data())
def test_arbitrary_and_truncated_lines_never_raise(lines: list[bytes], data: st.DataObject) -> None:
    """Whatever opencode printed, cut wherever: the parser answers, never raises."""
    lines = [*_lines("run-priced.jsonl"), *lines]
    cut = data.draw(st.integers(0, len(lines)))
    tail = lines[cut - 1][: data.draw(st.integers(0, 80))] if cut else b""
    figures = parse_opencode([*lines[: max(cut - 1, 0)], tail])
    assert figures.cost_usd is None or figures.cost_usd > 0
