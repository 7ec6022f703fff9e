"""Every event, effect and state round-trips through the cattrs converter, tags included."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline import WireFormatError
from pipeline.app.testing import effects, events, reachable_states
from pipeline.core.effects import EFFECT_TAGS, Effect
from pipeline.core.serialization import (
    decode_effect,
    decode_event,
    decode_state,
    encode_effect,
    encode_event,
    encode_state,
)
from pipeline.core.state import PipelineState
from pipeline.events import WIRE_TAGS, Instant, Json, Ordinal, PipelineEvent, TopicPublished
from tests.support import WHOLE_RUNS, identical


@given(events())
def test_every_event_round_trips_with_its_wire_tag(event: PipelineEvent) -> None:
    """decode(encode(e)) == e, and the JSON carries the event's stable ``type`` tag."""
    data = encode_event(event)
    assert orjson.loads(data)["type"] == WIRE_TAGS[type(event)]
    assert identical(decode_event(data), event)


@given(effects())
def test_every_effect_round_trips_with_its_tag(effect: Effect) -> None:
    """decode(encode(x)) == x for effects, with the effect's ``type`` tag."""
    data = encode_effect(effect)
    assert orjson.loads(data)["type"] == EFFECT_TAGS[type(effect)]
    assert identical(decode_effect(data), effect)


_EFFECT_TAGS = {
    "StartRun": "effect.start_run",
    "Begin": "effect.begin",
    "MaterializePrompt": "effect.materialize_prompt",
    "InvokeAgent": "effect.invoke_agent",
    "CollectReport": "effect.collect_report",
    "RequireHuman": "effect.require_human",
    "BackOff": "effect.back_off",
    "WaitForLimitReset": "effect.wait_for_limit_reset",
    "SaveCheckpoint": "effect.save_checkpoint",
    "RunHook": "effect.run_hook",
    "CreateCommit": "effect.create_commit",
    "Rebase": "effect.rebase",
    "AbortRebase": "effect.abort_rebase",
    "RunGate": "effect.run_gate",
    "ScreenChanges": "effect.screen_changes",
    "ValidateFinalState": "effect.validate_final_state",
    "TriggerDevFix": "effect.trigger_dev_fix",
    "WriteCompletionMarker": "effect.write_completion_marker",
    "WaitForHuman": "effect.wait_for_human",
    "RestorePromptPermissions": "effect.restore_prompt_permissions",
    "CompleteRun": "effect.complete_run",
    "Terminate": "effect.terminate",
}
"""Every effect's tag as released (its ``type`` on the wire and its span's name in traces)."""


def test_every_effect_keeps_its_released_tag() -> None:
    """The tags derived from the effects' class names are the released ones: a renamed,
    added or removed effect shows here, so its tag changes only on purpose."""
    assert {cls.__name__: tag for cls, tag in EFFECT_TAGS.items()} == _EFFECT_TAGS


@WHOLE_RUNS
@given(reachable_states())
def test_every_reachable_state_round_trips(state: PipelineState) -> None:
    """States encode deterministically and decode to an equal state."""
    data = encode_state(state)
    assert identical(decode_state(data), state)
    assert encode_state(decode_state(data)) == data


def test_sets_encode_in_sorted_order_whatever_their_iteration_order() -> None:
    """Equal states encode to equal bytes in every process, whatever the hash seed."""
    from attrs import evolve

    state = evolve(
        PipelineState(),
        intake=evolve(PipelineState().intake, seen_topics=frozenset(["zeta", "alpha", "mid"])),
    )
    assert orjson.loads(encode_state(state))["intake"]["seen_topics"] == ["alpha", "mid", "zeta"]


def test_identical_sees_a_str_enum_decoded_as_plain_str() -> None:
    """The comparison used above catches what ``==`` misses."""
    from pipeline.events import Role

    assert Role.PLANNER == "planner"
    assert not identical(Role.PLANNER, "planner")
    assert not identical({"planner": 1}, {Role.PLANNER: 1})


@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_to_an_event_or_a_wire_format_error(data: bytes) -> None:
    """Garbage never escapes as anything but WireFormatError."""
    with contextlib.suppress(WireFormatError):
        decode_event(data)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"type": "agent.no_such_event"}', "unknown type tag 'agent.no_such_event'"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b"{", "is not valid JSON"),
        (
            b'{"type": "agent.topic_published", "topic": 7, "payload": "p", '
            b'"line_number": 1, "at": "2026-01-01T00:00:00+00:00"}',
            "expected a string, got 7 @ event.topic",
        ),
        (
            b'{"type": "agent.topic_published", "topic": "t", "payload": "p", '
            b'"line_number": 0, "emitted_at": null, "at": "2026-01-01T00:00:00+00:00"}',
            "line_number must be from 1 to 2**53, got 0",
        ),
        (
            b'{"type": "agent.topic_published", "topic": "t", "payload": "p", '
            b'"line_number": 1, "at": "2026-01-01T00:00:00"}',
            "expected a time with a UTC offset",
        ),
        (
            b'{"type": "agent.topic_published", "topic": "t", "payload": "p", "extra": 1, '
            b'"line_number": 1, "at": "2026-01-01T00:00:00+00:00"}',
            "extra fields found (extra)",
        ),
        (
            b'{"type": "agent.invocation_failed", "role": "developer", "agent": "a", '
            b'"error": "other", "message": "m", "retriable": "yes", '
            b'"at": "2026-01-01T00:00:00+00:00"}',
            "expected a boolean, got 'yes' @ event.retriable",
        ),
        (
            b'{"type": "agent.invocation_failed", "role": "wizard", "agent": "a", '
            b'"error": "other", "message": "m", "retriable": true, '
            b'"at": "2026-01-01T00:00:00+00:00"}',
            "'wizard' is not a valid Role @ event.role",
        ),
        (
            b'{"type": "agent.invocation_failed", "role": 3, "agent": "a", '
            b'"error": "other", "message": "m", "retriable": true, '
            b'"at": "2026-01-01T00:00:00+00:00"}',
            "expected a string, got 3 @ event.role",
        ),
        (
            b'{"type": "agent.invocation_failed", "role": "developer", "agent": 5, '
            b'"error": "other", "message": "m", "retriable": true, '
            b'"at": "2026-01-01T00:00:00+00:00"}',
            "expected a string, got 5 @ event.agent",
        ),
        (
            b'{"type": "agent.topic_published", "topic": "t", "payload": "p", '
            b'"line_number": true, "emitted_at": null, "at": "2026-01-01T00:00:00+00:00"}',
            "expected an integer, got True @ event.line_number",
        ),
    ],
)
def test_bad_event_data_is_named_in_the_error(payload: bytes, message: str) -> None:
    """Each kind of bad input raises WireFormatError naming the problem and the field."""
    with pytest.raises(WireFormatError) as raised:
        decode_event(payload)
    assert message in str(raised.value)


def test_wire_format_error_is_a_value_error() -> None:
    """Callers can catch the builtin the error resembles."""
    assert issubclass(WireFormatError, ValueError)


def test_an_event_encodes_to_the_documented_shape() -> None:
    """A concrete example of the wire format, so a change to it is seen in review."""

    event = TopicPublished(
        topic="build.done",
        payload=Json.of({"tests": 12, "failed": []}),
        line_number=Ordinal(3),
        emitted_at=None,
        at=Instant(datetime(2026, 1, 2, tzinfo=UTC)),
    )
    assert orjson.loads(encode_event(event)) == {
        "type": "agent.topic_published",
        "topic": "build.done",
        "payload": {"failed": [], "tests": 12},
        "line_number": 3,
        "emitted_at": None,
        "at": "2026-01-02T00:00:00+00:00",
    }
