"""One fact, one readable line: no Python reprs, no line breaks from multi-line values; the
same line from the event and from the JSON the store keeps of it."""

from __future__ import annotations

import enum
import typing
from datetime import UTC, datetime
from typing import Any

import attrs
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.app.cli._describe import describe, show
from pipeline.app.cli._render import describe_event
from pipeline.app.testing import events
from pipeline.core.serialization import encode_event
from pipeline.events import (
    WIRE_TAGS,
    AgentName,
    CommitMessageGenerated,
    Digest,
    DurationMs,
    ExitCode,
    GateBoundary,
    GateFinished,
    GateStarted,
    GateStatus,
    Instant,
    Json,
    PipelineEvent,
    Role,
    RoleChain,
    RunStarted,
)

T = Instant(datetime(2026, 1, 1, tzinfo=UTC))


@given(events())
def test_every_event_is_one_line_without_python_reprs(event: PipelineEvent) -> None:
    """Whatever the fields hold, the line has no line break and no ``<Enum: ...>`` repr."""
    line = describe_event(event)
    assert "\n" not in line
    assert "\r" not in line
    assert "<Role." not in line
    assert "RoleChain(" not in line


@given(st.from_type(RunStarted))
def test_a_run_started_line_shows_its_chains_readably(started: RunStarted) -> None:
    """The first line of every run: chains as ``role:first>fallback``."""
    chains = (RoleChain(role=Role.PLANNER, agents=(AgentName("claude"), AgentName("codex"))),)
    line = describe_event(attrs.evolve(started, chains=chains))
    assert "chains=planner:claude>codex" in line


def test_a_multi_line_commit_message_stays_on_one_line() -> None:
    """The message's breaks are shown as ``\\n``."""
    fact = CommitMessageGenerated(message="Fix it\n\nThe body", at=T)
    line = describe_event(fact)
    assert "\n" not in line
    assert "Fix it\\n\\nThe body" in line


def test_a_gate_start_is_its_gate_and_boundary() -> None:
    """``validation.gate_started``: which gate, at which boundary."""
    line = describe_event(GateStarted(gate="tests", boundary=GateBoundary.FINAL, at=T))
    assert line == "validation.gate_started gate=tests boundary=final"


def test_a_gate_report_says_how_it_ended_its_last_line_and_the_whole_log_path() -> None:
    """``validation.gate_finished``: status, exit code, duration, the last line of the output
    (a test runner's summary; control characters escaped) and the log's path, never cut short;
    not the command (it can be a whole script) nor the digest."""
    log = ".ralph/runs/20260101-120000-abcdef/logs/gate-a-rather-long-gate-name-1234.log"
    fact = GateFinished(
        gate="tests",
        boundary=GateBoundary.COMPLETION,
        argv=("python", "-c", "import sys\nsys.exit(1)"),
        status=GateStatus.FAILED,
        exit_code=ExitCode(1),
        duration_ms=DurationMs(41_250),
        output_digest=Digest("ab" * 32),
        log_path=log,
        tail="FAILED tests/test_calc.py::test_div\n\x1b[31m1 failed, 3 passed\x1b[0m\n",
        at=T,
    )
    assert describe_event(fact) == (
        "validation.gate_finished gate=tests boundary=completion status=failed exit_code=1 "
        "duration=41.250s last_line=\\x1b[31m1 failed, 3 passed\\x1b[0m "
        f"log_path={log}"
    )
    not_started = attrs.evolve(fact, status=GateStatus.NOT_STARTED, exit_code=None, tail="")
    assert describe_event(not_started) == (
        "validation.gate_finished gate=tests boundary=completion status=not_started "
        f"duration=41.250s log_path={log}"
    )


_SHAPED = {"validation.gate_finished", "validation.changes_screened"}
_SHAPED |= {"validation.screen_base_recorded", "lifecycle.sandbox_checked"}
"""The events with a line of their own shape (pinned by the tests above and in
``test_gates_shown`` and ``test_screens_shown``)."""


def _typed(value: Any) -> str:
    """A field's value as people read it, by its type: an enum its value, a time to the
    second, a payload its JSON text, a chain ``role:a>b``, a record its class's name, a
    tuple its items joined by commas."""
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, Json):
        return value.text
    if isinstance(value, RoleChain):
        return f"{value.role.value}:{'>'.join(value.agents)}"
    if attrs.has(type(value)):
        return type(value).__name__
    if isinstance(value, tuple):
        return ",".join(_typed(item) for item in value)
    return str(value)


@pytest.mark.parametrize(
    "variant", [v for v in typing.get_args(PipelineEvent) if WIRE_TAGS[v] not in _SHAPED]
)
@settings(max_examples=10, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_line_from_the_stored_json_reads_each_field_by_its_type(
    variant: type[PipelineEvent], data: st.DataObject
) -> None:
    """Every variant's line, made from the JSON the store keeps (which says nothing of
    types), shows each field set as its type reads: the tables of ``_describe`` name every
    time, record, payload and chain field there is (a new one missing from them fails)."""
    event = data.draw(st.from_type(variant))
    fields = [
        f"{f.name}={show(_typed(getattr(event, f.name)))}"
        for f in attrs.fields(type(event))
        if f.name != "at" and getattr(event, f.name) is not None
    ]
    expected = f"{WIRE_TAGS[type(event)]} " + " ".join(fields)
    assert describe(orjson.loads(encode_event(event))) == expected == describe_event(event)
