"""The sandbox's facts in the fold: ``SandboxChecked`` is a note for the views that changes no
decision, and ``ConnectionRefused`` tells the agent's next working prompt what was refused."""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from pipeline.core.effects import MaterializePrompt
from pipeline.core.state import Phase, PipelineState
from pipeline.events import (
    CONNECTION_REFUSED_TOPIC,
    AgentName,
    ConnectionRefused,
    Count,
    Instant,
    InvocationSucceeded,
    Role,
    SandboxChecked,
    SandboxMode,
)
from pipeline.orchestration import next_effect
from pipeline.reducers import fold, reduce
from tests.support import scripted_run

T = Instant(datetime(2026, 11, 1, tzinfo=UTC))
CHECKED = SandboxChecked(
    mode=SandboxMode.AUTO,
    on=True,
    said="on (bubblewrap 0.8.0)",
    endpoints=(),
    withheld=("A_TOKEN",),
    at=T,
)


def test_a_sandbox_check_before_the_run_started_is_an_anomaly() -> None:
    after = reduce(PipelineState(), CHECKED)
    assert after.ledger.anomalies == 1
    assert after.phase is Phase.NOT_STARTED


def test_a_sandbox_check_after_the_start_changes_no_decision() -> None:
    """Right after RunStarted, as the runtime records it: the run goes on as without it."""
    events = scripted_run().events
    started = fold(events[:1])
    checked = reduce(started, CHECKED)
    assert checked.ledger.anomalies == 0
    assert (checked.phase, checked.progress.step) == (started.phase, started.progress.step)
    assert type(next_effect(checked)) is type(next_effect(started))
    assert fold([events[0], CHECKED, *events[1:]]).phase is Phase.COMPLETE


def test_a_refused_connection_is_in_the_next_working_prompt() -> None:
    events = scripted_run().events
    state = PipelineState()
    for event in events:
        state = reduce(state, event)
        if isinstance(event, InvocationSucceeded) and event.role is Role.DEVELOPER:
            break
    refused = ConnectionRefused(
        role=Role.DEVELOPER,
        agent=AgentName("claude"),
        endpoint="chatgpt.com:443",
        count=Count(3),
        at=T,
    )
    after = reduce(state, refused)
    assert after.ledger.anomalies == state.ledger.anomalies
    (notice,) = [n for n in after.intake.notices if n.topic == CONNECTION_REFUSED_TOPIC]
    assert "chatgpt.com:443 (3 times)" in notice.text
    # The run goes on (the rest of its facts after the refusal) to its next working prompt,
    # which carries the notice.
    for later in events[events.index(event) + 1 :]:
        effect = next_effect(after)
        if isinstance(effect, MaterializePrompt) and effect.role is not Role.COMMITTER:
            assert notice in effect.notices
            return
        after = reduce(after, later)
    raise AssertionError("no working prompt followed the refusal")


def test_once_is_said_once() -> None:
    state = fold(scripted_run().events[:1])
    refused = ConnectionRefused(
        role=Role.DEVELOPER, agent=AgentName("a"), endpoint="[::1]:8080", count=Count(1), at=T
    )
    (notice,) = reduce(state, refused).intake.notices
    assert "to [::1]:8080 (once)" in notice.text
    assert attrs.evolve(refused, count=Count(2)) != refused
