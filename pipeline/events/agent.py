"""Agent facts: invocations and their outcomes, backoff waits, and what agents reported (pure data).

An invocation is ``InvocationStarted`` followed by exactly one of ``InvocationSucceeded``,
``InvocationFailed``, ``InvocationTimedOut`` or ``ProviderLimited`` (:mod:`.limits`). A success
is followed, in the same batch, by the role's output fact (a plan, an iteration status, a
review verdict, a commit message, a dev-fix report); a success with no output fact counts as
a failure when the next attempt starts.
"""

from __future__ import annotations

from typing import Final, TypeAlias, final

from attrs import field, frozen

from pipeline.events.limits import LimitResetAwaited, ProviderLimited, UsageWindowReported
from pipeline.events.values import (
    COUNT_VALIDATOR,
    EXIT_CODE_VALIDATOR,
    INSTANT_VALIDATOR,
    OPTIONAL_COUNT_VALIDATOR,
    ORDINAL_VALIDATOR,
    USD_VALIDATOR,
    AgentName,
    CostSource,
    Count,
    Digest,
    DurationMs,
    ErrorKind,
    ExitCode,
    Instant,
    Json,
    Ordinal,
    ResponseStatus,
    Role,
    TimeoutKind,
    Usd,
)

__all__ = [
    "MALFORMED_TOPIC",
    "AgentEvent",
    "BackoffWaited",
    "ConnectionRefused",
    "EventsFileRead",
    "EventsFileTruncated",
    "InvocationFailed",
    "InvocationStarted",
    "InvocationSucceeded",
    "InvocationTimedOut",
    "OutputLineMalformed",
    "ResponseSubmitted",
    "TopicPublished",
    "UsageReported",
]


@final
@frozen(kw_only=True)
class InvocationStarted:
    """Agent ``agent`` (``model`` if known) started in ``role``; ``attempt`` counts per task."""

    role: Role
    agent: AgentName
    model: str | None
    attempt: Ordinal = field(validator=ORDINAL_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class InvocationSucceeded:
    """The agent process exited successfully."""

    role: Role
    agent: AgentName
    exit_code: ExitCode = field(validator=EXIT_CODE_VALIDATOR)
    duration_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    output_digest: Digest
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class InvocationFailed:
    """The agent invocation failed; ``retriable`` says whether the same agent may succeed later."""

    role: Role
    agent: AgentName
    error: ErrorKind
    message: str
    retriable: bool
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class InvocationTimedOut:
    """The agent was stopped after ``after_ms`` by the ``kind`` timeout (a retriable failure)."""

    role: Role
    agent: AgentName
    kind: TimeoutKind
    after_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class BackoffWaited:
    """The handler waited ``delay_ms`` (its jitter choice) before retrying ``role``."""

    role: Role
    delay_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class TopicPublished:
    """The agent published ``topic`` with ``payload`` on line ``line_number`` of its events file.

    ``emitted_at`` is the line's own ``ts`` (None when it had none); ``at`` is when the handler
    read the line.
    """

    topic: str
    payload: Json
    line_number: Ordinal = field(validator=ORDINAL_VALIDATOR)
    emitted_at: Instant | None
    at: Instant = field(validator=INSTANT_VALIDATOR)


MALFORMED_TOPIC: Final = "event.malformed"
"""The topic each malformed line stands for in the run's topic log."""


@final
@frozen(kw_only=True)
class OutputLineMalformed:
    """Line ``line_number`` of the agent's events file could not be read as an event."""

    line_number: Ordinal = field(validator=ORDINAL_VALIDATOR)
    content: str
    error: str
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class EventsFileRead:
    """The run's events file was read through byte ``offset``, the end of line ``lines``.

    Every topic and malformed line up to there is already in the log, so a resumed run reads
    on from here and never reads a line twice.
    """

    offset: Count = field(validator=COUNT_VALIDATOR)
    lines: Count = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class EventsFileTruncated:
    """The run's events file held ``size`` bytes, fewer than the ``offset`` already read: it
    was truncated or replaced, and is read again from its start (line numbers go on).
    """

    offset: Count = field(validator=COUNT_VALIDATOR)
    size: Count = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


def _problems_match_status(
    instance: ResponseSubmitted, _: object, problems: tuple[str, ...]
) -> None:
    # A valid response has nothing wrong with it; an invalid one says what is wrong.
    if (instance.status is ResponseStatus.VALID) != (not problems):
        raise ValueError(f"a {instance.status.value} response with {len(problems)} problems")


@final
@frozen(kw_only=True)
class ResponseSubmitted:
    """The agent in ``role``, asked for a structured response, answered with ``raw_response``
    (its whole ``response.json``; empty when it wrote none), which the handler judged against
    the role's schema: ``status``, and what is wrong with it, one line each (``pointer:
    message`` per schema violation, or why the text is no JSON). The verdict is an observation
    made once: replaying the log never runs a validator again."""

    role: Role
    raw_response: str
    status: ResponseStatus
    problems: tuple[str, ...] = field(validator=_problems_match_status)
    at: Instant = field(validator=INSTANT_VALIDATOR)


@final
@frozen(kw_only=True)
class UsageReported:
    """What the invocation of ``agent`` in ``role`` used, as its output said (None: not said).

    Reported once per invocation whose agent ran, before its outcome. ``input_tokens`` counts
    the tokens sent that were not read from a cache. ``cost_usd`` is None exactly when
    ``cost_source`` is ``unknown``; ``note`` says why when something is missing.
    """

    role: Role
    agent: AgentName
    model: str | None
    input_tokens: Count | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    output_tokens: Count | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    cache_read_tokens: Count | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    cache_write_tokens: Count | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    turns: Count | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    session_id: str | None
    api_duration_ms: DurationMs | None = field(validator=OPTIONAL_COUNT_VALIDATOR)
    cost_usd: Usd | None = field(validator=USD_VALIDATOR)
    cost_source: CostSource
    note: str
    at: Instant = field(validator=INSTANT_VALIDATOR)

    def __attrs_post_init__(self) -> None:
        if (self.cost_usd is None) != (self.cost_source is CostSource.UNKNOWN):
            raise ValueError(
                f"cost_usd is {self.cost_usd!r} but cost_source is {self.cost_source.value}"
            )

    @property
    def tokens(self) -> int:
        """Every token counted: input (cached or not) and output."""
        return sum(
            n or 0
            for n in (
                self.input_tokens,
                self.output_tokens,
                self.cache_read_tokens,
                self.cache_write_tokens,
            )
        )


@final
@frozen(kw_only=True)
class ConnectionRefused:
    """The sandbox refused ``count`` connections of agent ``agent`` in ``role`` to
    ``endpoint`` (``host:port``) during its last invocation."""

    role: Role
    agent: AgentName
    endpoint: str
    count: Count = field(validator=COUNT_VALIDATOR)
    at: Instant = field(validator=INSTANT_VALIDATOR)


AgentEvent: TypeAlias = (
    InvocationStarted
    | InvocationSucceeded
    | InvocationFailed
    | InvocationTimedOut
    | BackoffWaited
    | TopicPublished
    | OutputLineMalformed
    | EventsFileRead
    | EventsFileTruncated
    | ResponseSubmitted
    | UsageReported
    | ConnectionRefused
    | ProviderLimited
    | LimitResetAwaited
    | UsageWindowReported
)
"""Facts about agent processes and what they reported."""
