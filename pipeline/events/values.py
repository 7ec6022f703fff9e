"""Value types shared by events, effects and state (pure).

Ids and bounded numbers are ``NewType``s so that hypothesis strategies can be registered for them
(see :mod:`pipeline.app.testing`) and so that the type checker keeps an iteration apart from an exit
code. Enums hold every closed set of names; their values are the stable wire spelling.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final, NewType, final

from attrs import Attribute, field, frozen

from pipeline.events._json import Json, JsonValue

__all__ = [
    "COUNT_VALIDATOR",
    "EXIT_CODES",
    "EXIT_CODE_VALIDATOR",
    "FILE_MODE_VALIDATOR",
    "INSTANT_VALIDATOR",
    "MAX_COUNT",
    "MAX_EXIT_CODE",
    "MAX_FILE_MODE",
    "MIN_EXIT_CODE",
    "OPTIONAL_COUNT_VALIDATOR",
    "ORDINAL_VALIDATOR",
    "USD_VALIDATOR",
    "AgentName",
    "Budget",
    "CheckpointTrigger",
    "CostSource",
    "Count",
    "Digest",
    "DurationMs",
    "ErrorKind",
    "ExitCode",
    "GateAction",
    "GateBoundary",
    "GatePin",
    "GateStatus",
    "Instant",
    "IterationStatus",
    "Json",
    "JsonValue",
    "LogPosition",
    "Ordinal",
    "PromptKind",
    "QuestionId",
    "Role",
    "RoleChain",
    "RunId",
    "TerminationReason",
    "TimeoutKind",
    "Usd",
    "WorkspaceErrorKind",
]

from pipeline.events._validators import (
    COUNT_VALIDATOR,
    EXIT_CODE_VALIDATOR,
    FILE_MODE_VALIDATOR,
    INSTANT_VALIDATOR,
    MAX_COUNT,
    MAX_EXIT_CODE,
    MAX_FILE_MODE,
    MIN_EXIT_CODE,
    OPTIONAL_COUNT_VALIDATOR,
    ORDINAL_VALIDATOR,
    USD_VALIDATOR,
)

RunId = NewType("RunId", str)
"""Identifies one pipeline run; made by a handler (time plus randomness), carried in events."""

AgentName = NewType("AgentName", str)
"""The configured name of an agent backend (``main``, ``reviewer``, ``my-script``)."""

QuestionId = NewType("QuestionId", str)
"""Identifies one question put to a human."""

Digest = NewType("Digest", str)
"""A hex content digest (sha256) of a prompt, config or output."""

Instant = NewType("Instant", datetime)
"""A timezone-aware UTC time read by a handler; the pure layers never read a clock."""

Count = NewType("Count", int)
"""A non-negative count, at most 2**53 so that every JSON reader keeps it exact."""

Ordinal = NewType("Ordinal", int)
"""A 1-based position (iteration, attempt, review pass, line number)."""

LogPosition = NewType("LogPosition", int)
"""A position in a run's event log: the number of events before it (0-based)."""

DurationMs = NewType("DurationMs", int)
"""A non-negative duration in milliseconds."""

ExitCode = NewType("ExitCode", int)
"""A process exit status (negative for death by signal, as subprocess reports it)."""

Usd = NewType("Usd", float)
"""An amount of money in US dollars: finite and not negative."""


@enum.unique
class Role(enum.StrEnum):
    """The part an agent plays in the pipeline; each role has its own agent chain."""

    PLANNER = "planner"
    DEVELOPER = "developer"
    REVIEWER = "reviewer"
    COMMITTER = "committer"
    FIXER = "fixer"


@enum.unique
class PromptKind(enum.StrEnum):
    """Which prompt template was materialised."""

    PLANNING = "planning"
    DEVELOPMENT = "development"
    REVIEW = "review"
    REVIEW_FIX = "review_fix"
    COMMIT_MESSAGE = "commit_message"
    DEV_FIX = "dev_fix"
    FORMAT_CORRECTION = "format_correction"
    """A correction turn: the agent's malformed structured response, to be answered again."""
    HAT = "hat"
    """A hat of a user's topology at work on the topic that woke it."""


@enum.unique
class IterationStatus(enum.StrEnum):
    """How an agent judged its own development iteration or fix attempt."""

    COMPLETED = "completed"
    PARTIAL = "partial"
    FAILED = "failed"


@enum.unique
class ErrorKind(enum.StrEnum):
    """Why an agent invocation failed, as far as the handler could tell."""

    NOT_FOUND = "not_found"
    NON_ZERO_EXIT = "non_zero_exit"
    KILLED = "killed"
    RATE_LIMITED = "rate_limited"
    """Reported before schema 13; a provider's limit is now the ``ProviderLimited`` fact."""
    OUTPUT_REJECTED = "output_rejected"
    OTHER = "other"
    CONFIGURATION = "configuration"
    """The agent refused how it was set up (an option, a permission, trust): retrying or
    falling back to dev-fix cannot help; a person must change the configuration."""


@enum.unique
class CostSource(enum.StrEnum):
    """Where an invocation's cost comes from."""

    REPORTED = "reported"
    """The agent CLI reported it."""
    ESTIMATED = "estimated"
    """Computed from the reported tokens and the model's prices in ``ralph.toml``."""
    UNKNOWN = "unknown"
    """Neither: the CLI reported no cost and no price is configured (never a made-up 0)."""


@enum.unique
class ResponseStatus(enum.StrEnum):
    """What an agent's structured response turned out to be, judged against its schema."""

    VALID = "valid"
    INVALID_JSON = "invalid_json"
    SCHEMA_VIOLATION = "schema_violation"


@enum.unique
class GateBoundary(enum.StrEnum):
    """Where a gate runs: at every final validation, when a claimed completion takes the run
    there, after every developer task that did work, or only before such work is committed."""

    FINAL = "final"
    COMPLETION = "completion"
    ITERATION = "iteration"
    """After each development iteration, hat activation or review fix that reports work."""
    COMMIT = "commit"
    """As ``iteration``, but only where a commit follows (never in a read-only workflow)."""
    TOPIC = "topic"
    """After a hat's activation that published a topic matching one of the gate's patterns
    (``GateSpec.topics``): the topic reaches no hat unless the gate passes."""


@enum.unique
class GatePin(enum.StrEnum):
    """Where a gate's checks come from: the run's base commit (the person's tests and test
    configuration, the agent's code), or the agent's work tree as it is (``ralph run
    --tests-editable``, ``[tamper] pin = "off"``)."""

    BASE = "base"
    OFF = "off"


@enum.unique
class GateAction(enum.StrEnum):
    """What a failed gate does: the agent is told and works on (block), told only (warn), or
    the run ends (stop)."""

    BLOCK = "block"
    WARN = "warn"
    STOP = "stop"


@enum.unique
class GateStatus(enum.StrEnum):
    """How a gate's command ended."""

    PASSED = "passed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    NOT_STARTED = "not_started"
    """The program is missing or could not be run."""


@enum.unique
class TimeoutKind(enum.StrEnum):
    """Which timeout ended an agent invocation."""

    INACTIVITY = "inactivity"
    TOTAL = "total"


@enum.unique
class WorkspaceErrorKind(enum.StrEnum):
    """What kind of workspace I/O failed."""

    READ = "read"
    WRITE = "write"
    PERMISSION = "permission"
    GIT = "git"


@enum.unique
class CheckpointTrigger(enum.StrEnum):
    """Why orchestration asked for a checkpoint."""

    PHASE = "phase"
    ITERATION = "iteration"
    BEFORE_DEV_FIX = "before_dev_fix"
    AFTER_DEV_FIX = "after_dev_fix"
    INTERRUPTION = "interruption"
    FINAL = "final"


def _distinct_agents(_instance: object, _attribute: Attribute[Any], value: Any) -> None:
    if len(set(value)) != len(value):
        raise ValueError(f"an agent chain names an agent twice: {value!r}")


@final
@frozen(kw_only=True)
class RoleChain:
    """The ordered agents a role falls back through: first the preferred, then the fallbacks."""

    role: Role
    agents: tuple[AgentName, ...] = field(validator=_distinct_agents)


def _role_costs(instance: object, attribute: Attribute[Any], value: Any) -> None:
    roles = [role for role, _ in value]
    if roles != sorted(set(roles), key=list(Role).index):
        raise ValueError(f"{attribute.name} must name each role once, in role order: {value!r}")
    for _, usd in value:
        _limit(instance, attribute, usd)


def _limit(instance: object, attribute: Attribute[Any], value: Any) -> None:
    """A spend limit is above 0 (a limit of 0 would stop a run before it starts)."""
    if value is None:
        return
    USD_VALIDATOR(instance, attribute, value)
    if not value > 0:
        raise ValueError(f"{attribute.name} must be more than 0 (leave it out for no limit)")


@final
@frozen(kw_only=True)
class Budget:
    """The limits one run works within; carried by ``RunStarted`` so that replay needs no config."""

    max_iterations: Ordinal = field(validator=ORDINAL_VALIDATOR)
    max_review_passes: Count = field(validator=COUNT_VALIDATOR)
    max_retries_per_agent: Count = field(validator=COUNT_VALIDATOR)
    backoff_base_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    backoff_cap_ms: DurationMs = field(validator=COUNT_VALIDATOR)
    max_consecutive_failures: Ordinal = field(validator=ORDINAL_VALIDATOR)
    max_consecutive_malformed: Ordinal = field(validator=ORDINAL_VALIDATOR)
    max_cost_usd: Usd | None = field(default=None, validator=_limit)
    """The most the run may spend (known costs only); None: no limit."""
    max_tokens: Count | None = field(default=None, validator=_limit)
    """The most tokens (input, cached or not, plus output) the run may use; None: no limit."""
    max_cost_without_progress_usd: Usd | None = field(default=None, validator=_limit)
    """The most the run may spend since its last commit with changes (a breaker)."""
    role_max_cost_usd: tuple[tuple[Role, Usd], ...] = field(default=(), validator=_role_costs)
    """The most each named role may spend, in role order."""

    @property
    def limits_spend(self) -> bool:
        """Whether any cost or token budget is set."""
        return (
            self.max_cost_usd is not None
            or self.max_tokens is not None
            or self.max_cost_without_progress_usd is not None
            or bool(self.role_max_cost_usd)
        )

    def __attrs_post_init__(self) -> None:
        if self.backoff_cap_ms < self.backoff_base_ms:
            raise ValueError(
                f"backoff_cap_ms ({self.backoff_cap_ms}) is below backoff_base_ms "
                f"({self.backoff_base_ms})"
            )


@enum.unique
class TerminationReason(enum.StrEnum):
    """Why a run stopped; ``value`` is the stable string shown to people and stored in the log."""

    COMPLETED = "completed"
    NO_CHANGES = "no_changes"
    """Validation passed but the run committed nothing: no work was done, so no success."""
    MAX_ITERATIONS = "max_iterations"
    MAX_RUNTIME = "max_runtime"
    MAX_COST = "max_cost"
    CONSECUTIVE_FAILURES = "consecutive_failures"
    AGENT_CHAIN_EXHAUSTED = "agent_chain_exhausted"
    LOOP_STALE = "loop_stale"
    LOOP_THRASHING = "loop_thrashing"
    VALIDATION_FAILURE = "validation_failure"
    WORKSPACE_ERROR = "workspace_error"
    STOPPED = "stopped"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    HUMAN_INTERVENTION_REQUIRED = "human_intervention_required"
    ABANDONED = "abandoned"
    WORKFLOW_STALLED = "workflow_stalled"
    """A user's topology has no topic pending after an activation and no default to publish."""
    GATE_FAILED = "gate_failed"
    """A gate whose failure stops the run (``on_failure = "stop"``) failed."""
    HOOK_BLOCKED = "hook_blocked"
    """A hook blocked the run's start or an agent's invocation (``on_error = "block"``)."""
    SUSPENDED = "suspended"
    """A hook suspended the run (``on_error = "suspend"``): ``ralph resume`` goes on."""

    @property
    def exit_code(self) -> int:
        """The process exit status ``ralph`` ends with for this reason."""
        return EXIT_CODES[self]

    @property
    def is_success(self) -> bool:
        """Whether the run did what it was asked (``cancelled`` exits 0 but is no success)."""
        return self is TerminationReason.COMPLETED


EXIT_CODES: Final[Mapping[TerminationReason, int]] = types.MappingProxyType(
    {
        TerminationReason.COMPLETED: 0,
        TerminationReason.NO_CHANGES: 1,
        TerminationReason.MAX_ITERATIONS: 2,
        TerminationReason.MAX_RUNTIME: 2,
        TerminationReason.MAX_COST: 2,
        TerminationReason.CONSECUTIVE_FAILURES: 1,
        TerminationReason.AGENT_CHAIN_EXHAUSTED: 1,
        TerminationReason.LOOP_STALE: 1,
        TerminationReason.LOOP_THRASHING: 1,
        TerminationReason.VALIDATION_FAILURE: 1,
        TerminationReason.WORKSPACE_ERROR: 1,
        TerminationReason.STOPPED: 1,
        TerminationReason.INTERRUPTED: 130,
        TerminationReason.CANCELLED: 0,
        TerminationReason.HUMAN_INTERVENTION_REQUIRED: 3,
        TerminationReason.ABANDONED: 1,
        TerminationReason.WORKFLOW_STALLED: 1,
        TerminationReason.GATE_FAILED: 1,
        TerminationReason.HOOK_BLOCKED: 1,
        TerminationReason.SUSPENDED: 3,
    }
)
"""The exit code of every termination reason (documented in docs/architecture/termination.md)."""
