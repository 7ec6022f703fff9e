"""The response classifier: valid, invalid JSON or schema violation, for any text, never raising."""

from __future__ import annotations

from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.core.responses import AGENT_RESPONSE
from pipeline.events import Instant, Json, ResponseStatus, ResponseSubmitted, Role
from pipeline.handlers.responses import InvalidSchemaError, check_schema, classify, judged

INSTANT = Instant(datetime(2026, 1, 1, tzinfo=UTC))


def test_a_valid_response_is_parsed() -> None:
    """action and parameters, optionally reasoning: valid, with the parsed value."""
    raw = '{"action": "write_file", "parameters": {"path": "a.py"}, "reasoning": "needed"}'
    verdict = classify(raw, AGENT_RESPONSE)
    assert verdict.status is ResponseStatus.VALID
    assert verdict.value == Json.of(orjson.loads(raw))
    assert verdict.violations == ()


def test_javascript_style_objects_are_invalid_json() -> None:
    """Unquoted keys and single quotes are not JSON."""
    verdict = classify("{ action: 'write_file' }", AGENT_RESPONSE)
    assert verdict.status is ResponseStatus.INVALID_JSON
    assert verdict.value is None


@pytest.mark.parametrize(
    "raw",
    ['```json\n{"action": "a", "parameters": {}}\n```', "Sure! Here it is.", "", "[1", "1e99999"],
)
def test_fences_prose_and_broken_text_are_invalid_json(raw: str) -> None:
    """Anything that is not exactly one JSON value."""
    assert classify(raw, AGENT_RESPONSE).status is ResponseStatus.INVALID_JSON


def test_a_schema_violation_names_every_offending_place() -> None:
    """{"bad": true}: action and parameters are missing, bad is not allowed."""
    verdict = classify('{"bad": true}', AGENT_RESPONSE)
    assert verdict.status is ResponseStatus.SCHEMA_VIOLATION
    messages = [str(v) for v in verdict.violations]
    assert any("'action' is a required property" in m for m in messages)
    assert any("'parameters' is a required property" in m for m in messages)
    assert any("'bad' was unexpected" in m for m in messages)


def test_violations_carry_json_pointers() -> None:
    """A wrong type deep inside is reported at its pointer."""
    verdict = classify('{"action": 3, "parameters": []}', AGENT_RESPONSE)
    assert {v.pointer for v in verdict.violations} == {"/action", "/parameters"}


def test_a_schema_must_be_a_json_schema() -> None:
    """check_schema refuses what draft 2020-12 does not allow."""
    check_schema(AGENT_RESPONSE)
    with pytest.raises(InvalidSchemaError, match="not a valid JSON Schema"):
        check_schema(Json.of({"type": "no-such-type"}))
    with pytest.raises(InvalidSchemaError):
        check_schema(Json.of([1, 2]))


@given(st.text())
def test_any_text_gets_exactly_one_verdict_and_never_raises(raw: str) -> None:
    """Valid iff it parses and meets the schema; violations only with SCHEMA_VIOLATION."""
    verdict = classify(raw, AGENT_RESPONSE)
    assert verdict.status in set(ResponseStatus)
    assert (verdict.status is ResponseStatus.SCHEMA_VIOLATION) is bool(verdict.violations)
    assert (verdict.value is None) is (verdict.status is ResponseStatus.INVALID_JSON)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
        max_leaves=10,
    )
)
def test_every_json_value_is_parsed_and_judged_deterministically(value: object) -> None:
    """Any JSON text parses; the same text always gets the same verdict."""
    raw = orjson.dumps(value).decode()
    first, second = classify(raw, AGENT_RESPONSE), classify(raw, AGENT_RESPONSE)
    assert first.status is not ResponseStatus.INVALID_JSON
    assert first == second


def test_problems_say_what_is_wrong_one_line_each() -> None:
    """The lines the correction prompt and the response log show: none when valid."""
    assert classify('{"action": "a", "parameters": {}}', AGENT_RESPONSE).problems == ()
    (malformed,) = classify("{ action: 'a' }", AGENT_RESPONSE).problems
    assert malformed.startswith("not one JSON value (invalid JSON: ")
    problems = classify('{"action": 3, "parameters": {}}', AGENT_RESPONSE).problems
    assert problems == ("/action: 3 is not of type 'string'",)


@given(
    st.sampled_from(['{"action": "a", "parameters": {}}', "{ action: 'a' }", '{"action": 3}', ""])
)
def test_the_fact_carries_the_verdict(raw: str) -> None:
    """What the handler records is the classifier's verdict, so a replay needs no validator."""
    verdict = classify(raw, AGENT_RESPONSE)
    fact = judged(Role.DEVELOPER, raw, AGENT_RESPONSE, INSTANT)
    assert (fact.raw_response, fact.status, fact.problems) == (
        raw,
        verdict.status,
        verdict.problems,
    )


def test_a_verdict_that_contradicts_its_problems_is_no_fact() -> None:
    """A valid response with problems, or an invalid one without, cannot be recorded."""
    with pytest.raises(ValueError, match="a valid response with 1 problems"):
        ResponseSubmitted(
            role=Role.DEVELOPER,
            raw_response="{}",
            status=ResponseStatus.VALID,
            problems=("/: bad",),
            at=INSTANT,
        )
    with pytest.raises(ValueError, match="a schema_violation response with 0 problems"):
        ResponseSubmitted(
            role=Role.DEVELOPER,
            raw_response="{}",
            status=ResponseStatus.SCHEMA_VIOLATION,
            problems=(),
            at=INSTANT,
        )
