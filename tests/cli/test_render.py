"""One fact, one readable line: no Python reprs, no line breaks from multi-line values."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.cli._render import describe_event
from pipeline.app.testing import events
from pipeline.events import (
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
