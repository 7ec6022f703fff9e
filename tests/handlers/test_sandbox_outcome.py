"""What an agent's failure in the sandbox is said as: cut off from everything, its failure or
timeout is the configuration's; able to reach something, its failure names what."""

from __future__ import annotations

from datetime import UTC, datetime

from pipeline.core.sandbox import NetworkMode, SandboxMode, SandboxPolicy, parse_endpoint
from pipeline.events import (
    AgentName,
    DurationMs,
    ErrorKind,
    Instant,
    InvocationFailed,
    InvocationTimedOut,
    LimitScope,
    ProviderLimited,
    Role,
    TimeoutKind,
)
from pipeline.handlers.runtime import cut_off
from pipeline.handlers.runtime._sandbox_outcome import sandbox_hint
from pipeline.handlers.sandbox import AgentNeeds

AT = Instant(datetime(2026, 11, 1, tzinfo=UTC))
MODEL = parse_endpoint("127.0.0.1:8080")
TIMED_OUT = InvocationTimedOut(
    role=Role.DEVELOPER,
    agent=AgentName("codex"),
    kind=TimeoutKind.INACTIVITY,
    after_ms=DurationMs(3000),
    at=AT,
)
LIMITED = ProviderLimited(
    role=Role.DEVELOPER,
    agent=AgentName("aider"),
    scope=LimitScope.REQUESTS,
    resets_at=None,
    window=None,
    source="output text",
    message="overloaded",
    at=AT,
)


def _policy(network: NetworkMode) -> SandboxPolicy:
    return SandboxPolicy(mode=SandboxMode.REQUIRED, network=network)


def test_an_agent_cli_with_nothing_to_reach_is_cut_off_and_a_command_never_is() -> None:
    none, allow = _policy(NetworkMode.NONE), _policy(NetworkMode.ALLOW)
    cli = AgentNeeds(preset="codex", endpoints=(MODEL,))
    assert cut_off(none, cli) == "[sandbox] network is none"
    assert cut_off(allow, cli) is None
    assert cut_off(allow, AgentNeeds(preset="codex")) == (
        "its CLI's settings name no model endpoint, and no allow entry applies"
    )
    assert cut_off(none, AgentNeeds()) is None  # a person's command may need no network


def test_a_cut_off_timeout_is_a_configuration_failure_that_is_not_retried() -> None:
    said = sandbox_hint(TIMED_OUT, (), "[sandbox] network is none")
    assert isinstance(said, InvocationFailed)
    assert (said.role, said.agent, said.at) == (TIMED_OUT.role, TIMED_OUT.agent, AT)
    assert (said.error, said.retriable) == (ErrorKind.CONFIGURATION, False)
    assert said.message == (
        "stopped by the inactivity timeout after 3000 ms; the sandbox lets this agent reach "
        "nothing ([sandbox] network is none), so it cannot reach its model"
    )


def test_a_timeout_of_an_agent_that_may_reach_its_model_stays_a_timeout() -> None:
    """A slow turn is no cut-off: it is retried as timeouts are."""
    assert sandbox_hint(TIMED_OUT, (MODEL,), None) == TIMED_OUT


def test_a_failure_before_any_request_names_what_may_be_reached_and_is_no_rate_limit() -> None:
    said = sandbox_hint(LIMITED, (MODEL,), None)
    assert isinstance(said, InvocationFailed)
    assert (said.error, said.retriable) == (ErrorKind.NON_ZERO_EXIT, False)
    assert said.message == "overloaded; the sandbox lets this agent reach only 127.0.0.1:8080"
    cut = sandbox_hint(LIMITED, (), "[sandbox] network is none")
    assert isinstance(cut, InvocationFailed)
    assert cut.error is ErrorKind.CONFIGURATION
