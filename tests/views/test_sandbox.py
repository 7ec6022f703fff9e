"""The sandbox of a run: its checks as recorded, and its refused connections added up per
endpoint, role and agent with the invocations they came from numbered as the timeline numbers
them (examples from hand-built logs, and laws over any events)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from pipeline.app.testing import events as any_events
from pipeline.events import (
    AgentName,
    ConnectionRefused,
    Count,
    Instant,
    InvocationFailed,
    InvocationStarted,
    InvocationSucceeded,
    InvocationTimedOut,
    PipelineEvent,
    Role,
    SandboxChecked,
    SandboxMode,
)
from pipeline.reducers import fold
from pipeline.reducers.views import (
    RefusedConnection,
    SandboxCheck,
    SandboxView,
    sandbox_view,
    timeline,
)
from tests.support import scripted_run

T = Instant(datetime(2026, 11, 1, tzinfo=UTC))
ON = SandboxChecked(
    mode=SandboxMode.AUTO,
    on=True,
    said="on (bubblewrap 0.8.0; network: 127.0.0.1:33415)",
    endpoints=("api.anthropic.com:443",),
    withheld=("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"),
    at=T,
)
OFF = SandboxChecked(
    mode=SandboxMode.AUTO,
    on=False,
    said="off (bwrap not found on PATH)",
    endpoints=(),
    withheld=(),
    at=T,
)


def _refused(
    endpoint: str, count: int, role: Role = Role.DEVELOPER, agent: str = "claude"
) -> ConnectionRefused:
    return ConnectionRefused(
        role=role, agent=AgentName(agent), endpoint=endpoint, count=Count(count), at=T
    )


def _inserted(
    log: Sequence[PipelineEvent], after: dict[int, Sequence[PipelineEvent]]
) -> tuple[PipelineEvent, ...]:
    """``log`` with the events of ``after[n]`` right after its n-th invocation ended (where
    the runtime records them), and ``after[0]`` right after RunStarted."""
    out: list[PipelineEvent] = [log[0], *after.get(0, ())]
    started = 0
    for event in log[1:]:
        started += isinstance(event, InvocationStarted)
        out.append(event)
        if isinstance(event, InvocationSucceeded | InvocationFailed | InvocationTimedOut):
            out.extend(after.get(started, ()))
    return tuple(out)


def test_a_log_without_a_check_or_a_refusal_has_no_sandbox() -> None:
    """The sandbox off in ``ralph.toml`` (or a run older than schema 12): nothing recorded,
    nothing to show."""
    view = sandbox_view(scripted_run().events)
    assert view == SandboxView()
    assert (view.recorded, view.check, view.refused_count) == (False, None, 0)


def test_a_check_is_what_the_run_recorded() -> None:
    """Mode, on, the words, endpoints and withheld names, as ``SandboxChecked`` has them."""
    log = _inserted(scripted_run().events, {0: [ON]})
    view = sandbox_view(log)
    assert view.check == SandboxCheck(
        at=T,
        mode=SandboxMode.AUTO,
        on=True,
        said="on (bubblewrap 0.8.0; network: 127.0.0.1:33415)",
        endpoints=("api.anthropic.com:443",),
        withheld=("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"),
    )
    assert (view.recorded, view.refused) == (True, ())


def test_an_off_check_is_recorded_too() -> None:
    """``auto`` on a machine where bwrap is missing: the check says off, and why."""
    view = sandbox_view((OFF,))
    assert view.check is not None
    assert (view.check.on, view.check.said) == (False, "off (bwrap not found on PATH)")


def test_every_check_is_kept_and_the_last_is_the_check() -> None:
    view = sandbox_view((OFF, ON))
    assert [c.on for c in view.checks] == [False, True]
    assert view.check == view.checks[-1]


def test_refusals_add_up_per_endpoint_role_and_agent_with_their_invocations() -> None:
    """Three refusals to one endpoint after invocations 1 and 3 are one entry of 4 with both
    numbers; another endpoint, or the same one from another role, its own entry; entries in
    the order first refused; the numbers are the timeline's."""
    run = scripted_run().events
    log = _inserted(
        run,
        {
            0: [ON],
            1: [_refused("chatgpt.com:443", 3), _refused("example.org:443", 1)],
            3: [_refused("chatgpt.com:443", 1), _refused("chatgpt.com:443", 2, Role.REVIEWER)],
        },
    )
    assert fold(log).ledger.anomalies == 0  # where the runtime records them: the run goes on
    view = sandbox_view(log)
    assert [(r.endpoint, r.role, r.count, r.invocations) for r in view.refused] == [
        ("chatgpt.com:443", Role.DEVELOPER, 4, (1, 3)),
        ("example.org:443", Role.DEVELOPER, 1, (1,)),
        ("chatgpt.com:443", Role.REVIEWER, 2, (3,)),
    ]
    assert view.refused_count == 7
    # The timeline numbers the same InvocationStarted facts from 1, in log order.
    started = sum(isinstance(e, InvocationStarted) for e in log)
    assert [bar.number for bar in timeline(log).bars] == list(range(1, started + 1))


def test_a_refusal_keeps_when_it_was_first_and_last_refused() -> None:
    later = Instant(T + timedelta(minutes=5))
    again = ConnectionRefused(
        role=Role.DEVELOPER, agent=AgentName("claude"), endpoint="a:1", count=Count(1), at=later
    )
    (entry,) = sandbox_view((_refused("a:1", 2), again)).refused
    assert (entry.first_at, entry.last_at, entry.count) == (T, later, 3)


def test_a_refusal_before_any_invocation_names_none() -> None:
    """A damaged log: the connections are counted, no invocation is named."""
    (entry,) = sandbox_view((_refused("a:1", 2),)).refused
    assert entry == RefusedConnection(
        endpoint="a:1",
        role=Role.DEVELOPER,
        agent=AgentName("claude"),
        count=2,
        invocations=(),
        first_at=T,
        last_at=T,
    )


def test_a_refusal_without_a_check_is_still_shown() -> None:
    """A log that has refusals but no check (hand-written, or damaged): recorded, no check."""
    view = sandbox_view((_refused("a:1", 1),))
    assert (view.recorded, view.check) == (True, None)


@given(st.lists(any_events(), max_size=40))
def test_for_any_events_the_view_holds_every_check_and_every_refused_connection(
    log: list[PipelineEvent],
) -> None:
    """One check per ``SandboxChecked`` in order; the refused connections add up to the sum
    of every ``ConnectionRefused``'s count, one entry per endpoint, role and agent."""
    view = sandbox_view(log)
    checked = [e for e in log if isinstance(e, SandboxChecked)]
    assert [(c.mode, c.on, c.said, c.at) for c in view.checks] == [
        (e.mode, e.on, e.said, e.at) for e in checked
    ]
    refusals = [e for e in log if isinstance(e, ConnectionRefused)]
    assert view.refused_count == sum(e.count for e in refusals)
    keys = [(r.endpoint, r.role, r.agent) for r in view.refused]
    assert keys == list(dict.fromkeys((e.endpoint, e.role, e.agent) for e in refusals))
    started = sum(isinstance(e, InvocationStarted) for e in log)
    assert all(0 < n <= started for r in view.refused for n in r.invocations)
