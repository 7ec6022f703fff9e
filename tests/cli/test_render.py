"""One fact, one readable line: no Python reprs, no line breaks from multi-line values."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs
from hypothesis import given
from hypothesis import strategies as st

from pipeline.cli._render import describe_event
from pipeline.events import (
    AgentName,
    CommitMessageGenerated,
    Instant,
    PipelineEvent,
    Role,
    RoleChain,
    RunStarted,
)
from pipeline.testing import events

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
    chains = (RoleChain(Role.PLANNER, (AgentName("claude"), AgentName("codex"))),)
    line = describe_event(attrs.evolve(started, chains=chains))
    assert "chains=planner:claude>codex" in line


def test_a_multi_line_commit_message_stays_on_one_line() -> None:
    """The message's breaks are shown as ``\\n``."""
    fact = CommitMessageGenerated("Fix it\n\nThe body", T)
    line = describe_event(fact)
    assert "\n" not in line
    assert "Fix it\\n\\nThe body" in line
