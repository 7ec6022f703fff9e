"""``PipelineState``: everything a decision needs, as immutable records (pure data).

The state is split by how often each part changes, because the reducer rebuilds the top-level
record for every event: ``progress`` changes on phase and step transitions, ``agent`` on agent
events, ``intake`` on what agents publish, ``ledger`` on bookkeeping. A reducer rebuilds the
top-level record and the one or two parts an event touches, nothing else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, final

from attrs import field, frozen

from pipeline.core.state.context import Context
from pipeline.core.state.gating import Gating
from pipeline.core.state.hooks import Hooks
from pipeline.core.state.integration import Integration
from pipeline.core.state.notices import Notice
from pipeline.core.state.phase import TERMINAL_PHASES, Phase, Step, agent_of
from pipeline.core.state.routing import Routing
from pipeline.core.state.rungs import Rung
from pipeline.core.state.spend import Spend
from pipeline.events.policy import LoopPolicy
from pipeline.events.values import (
    COUNT_VALIDATOR,
    ORDINAL_VALIDATOR,
    AgentName,
    Budget,
    CheckpointTrigger,
    Count,
    Digest,
    Instant,
    Ordinal,
    PromptKind,
    QuestionId,
    Role,
    RunId,
    TerminationReason,
)

__all__ = [
    "FEEDBACK_EXCERPT_CHARS",
    "FILE_ONLY_PROMPTS",
    "MAX_FEEDBACK_LINES",
    "AgentCursor",
    "Checkpoints",
    "Intake",
    "Ledger",
    "MalformedLineNote",
    "PendingQuestion",
    "PipelineState",
    "Progress",
    "ProtectedPrompt",
    "ResponseCheck",
    "RunInfo",
    "correcting",
    "is_complete",
    "is_terminal",
    "reviews_claims",
    "task_prompt_kind",
]


@final
@frozen(kw_only=True)
class RunInfo:
    """The run's identity and configuration, fixed by ``RunStarted``."""

    run_id: RunId
    budget: Budget
    chains: Mapping[Role, tuple[AgentName, ...]]
    rebase_onto: str | None
    started_at: Instant
    loop: LoopPolicy
    agent: AgentName | None = None
    """The agent a fork put first in every chain (``RunForked``; None: the chains as set)."""
    model: str | None = None
    """The model a fork's invocations ask for (``RunForked``; None: each hat's own)."""

    def chain(self, role: Role) -> tuple[AgentName, ...]:
        """The agents of ``role``'s chain (empty when the configuration names none)."""
        return self.chains.get(role, ())


@final
@frozen(kw_only=True)
class ResumePoint:
    """Where a stopped run goes on: its phase and step, and how it was ending when it stopped
    (an interruption during finalization keeps the reason the run ends with)."""

    phase: Phase
    step: Step
    termination: TerminationReason | None = None


@final
@frozen(kw_only=True)
class DevFixTask:
    """The dev-fix agent's task: the role whose chain was exhausted, and whether the fix
    worked once the fixer has reported (None: not yet)."""

    role: Role
    success: bool | None = None


@final
@frozen(kw_only=True)
class Progress:
    """Where the run is: phase, step, iteration and review pass, and what comes after a commit."""

    phase: Phase = Phase.NOT_STARTED
    step: Step = Step.BEGIN
    iteration: int = 0
    review_pass: int = 0
    fixing: bool = False
    after_commit: Phase | None = None
    consecutive_failed_iterations: int = 0
    resume: ResumePoint | None = None
    """Where the run goes on when resumed (interrupted, or handed to dev-fix)."""
    dev_fix: DevFixTask | None = None
    """The dev-fix task while the run awaits or runs one."""
    termination: TerminationReason | None = None

    @property
    def role(self) -> Role | None:
        """The role whose agent works now, if any."""
        agent = agent_of(self.phase, self.fixing)
        return None if agent is None else agent[0]


@final
@frozen(kw_only=True)
class AgentCursor:
    """Where the active role's task stands in its agent chain, and its retries.

    A cursor belongs to one task, and a task to one role (``Progress.role``); every new task
    starts a fresh cursor at the role's preferred agent.
    """

    chain_position: int = 0
    """The index, in the active role's chain, of the agent this task uses now."""
    retries: int = 0
    attempt: int = 0
    in_flight: bool = False
    awaiting_output: bool = False
    backoff_ceiling_ms: int | None = None
    limit_until: Instant | None = None
    """The reset the provider told of, which the task waits for before its next attempt."""
    limit_stop: bool = False
    """The run stops for that reset instead of waiting (``[limits]``); a person resumes it."""
    last_failure: str | None = None
    """How this agent's last attempt at this task failed (the same failure twice in a row is
    not retried: it will not go away by itself)."""


FEEDBACK_EXCERPT_CHARS: Final = 100
"""How much of a malformed line the next prompt shows (the log keeps the whole line)."""

MAX_FEEDBACK_LINES: Final = 10
"""How many malformed lines, the most recent, the next prompt lists; it counts the rest."""


@final
@frozen(kw_only=True)
class MalformedLineNote:
    """A malformed line as the next prompt shows it to the agent."""

    line_number: Ordinal = field(validator=ORDINAL_VALIDATOR)
    error: str
    excerpt: str
    """The line's first :data:`FEEDBACK_EXCERPT_CHARS` characters."""


@final
@frozen(kw_only=True)
class Intake:
    """What agents published: topics seen during the run's lifetime, malformed-line counters,
    how far the events file has been read, the feedback and notices owed to the next prompt,
    and the loop-control judgements on topics (scope, completion, loop detectors)."""

    seen_topics: frozenset[str] = frozenset()
    topics_published: int = 0
    malformed_lines: int = 0
    consecutive_malformed: int = 0
    events_offset: int = 0
    """Bytes of the events file already read into the log."""
    events_lines: int = 0
    """Lines of the events file already read into the log."""
    feedback: tuple[MalformedLineNote, ...] = ()
    """Malformed lines since the last prompt was rendered (at most the last
    :data:`MAX_FEEDBACK_LINES`)."""
    feedback_omitted: int = 0
    """Malformed lines since the last prompt that ``feedback`` no longer lists."""
    publisher: Role | None = None
    """The role of the last invocation started: the hat its events-file lines are judged by
    (None before any invocation: coordination, unrestricted)."""
    file_only: bool = False
    """The last invocation started answers in a file only (:data:`FILE_ONLY_PROMPTS`): ralph
    acts on no topic its agent publishes but a memory or task note, as its prompt and its MCP card
    say."""
    completion_claimed: bool = False
    """An accepted completion promise: the run goes to final validation at the next boundary."""
    repeat_signature: str | None = None
    """(topic, hat, payload digest) of the last topic, for stale-loop detection."""
    repeats: int = 0
    """How many times in a row ``repeat_signature`` was published."""
    blocked: tuple[tuple[str, int], ...] = ()
    """How often each task was reported blocked since it was last abandoned."""
    abandoned_tasks: int = 0
    scope_violations: int = 0
    completion_refusals: int = 0
    notices: tuple[Notice, ...] = ()
    """Notices owed to the next prompt (at most the last :data:`MAX_NOTICES`)."""
    notices_total: int = 0
    """Every notice ever made in the run (the topic log tells new ones by this count)."""


@final
@frozen(kw_only=True)
class PendingQuestion:
    """A question to a human awaiting an answer by ``deadline``."""

    question_id: QuestionId
    question: str
    deadline: Instant
    asked_by: Role | None = None
    """The hat that asked: the answer goes into its next prompt."""
    asked: bool = False
    """Whether the handler gave the question its id (``HumanQuestionAsked``): only then can it
    be answered. Before, ``question_id`` is ``line-N`` of the topic, which an agent can predict
    (logs from before schema 6 were answered under it)."""


@final
@frozen(kw_only=True)
class ResponseCheck:
    """The current task's structured response as judged so far (see ``Hat.response_schema``)."""

    valid: bool
    failures: int = field(validator=COUNT_VALIDATOR)
    """Invalid responses in this task so far; correction turns follow while it is at most the
    policy's ``max_formatting_retries``."""
    raw_response: str
    """The last response, whole."""
    violations: tuple[str, ...]
    """What is wrong with the last response: ``pointer: message`` each, or why it is no JSON."""


@final
@frozen(kw_only=True)
class ProtectedPrompt:
    """The user's prompt file, made read-only for the run, and the mode to give back."""

    path: str
    original_mode: Count


@final
@frozen(kw_only=True)
class Ledger:
    """Bookkeeping: commits, the plan, errors, anomalies and human questions."""

    plan_digest: Digest | None = None
    pending_commit_message: str | None = None
    commits: int = 0
    last_commit_sha: str | None = None
    last_error: str | None = None
    window_full: str | None = None
    """A provider's usage window past ``stop_at_utilization``: the run stops before its next
    agent starts (in words; None: no window is that full)."""
    anomalies: int = 0
    last_anomaly: str | None = None
    pending_question: PendingQuestion | None = None
    last_human_answer: str | None = None
    guidance_seen: int = 0
    """The number of the last person's guidance the run took in (``GuidanceGiven``)."""
    agent_failures: int = 0
    resumes: int = 0
    last_resume_sequence: int | None = None
    """The sequence right after the last resume (and the checkpoints saved straight after it):
    a commit asked for there may be the one the stopped process was making."""
    interruption_facts: int = 0
    """``RunInterrupted`` facts and the checkpoints they made due. Effect ids count neither
    (nor resumptions), so the effect an interruption cut short is asked for again under its
    own id and its handler finds work already done (a commit by its ``Ralph-Effect``)."""
    resume_facts: int = 0
    """Facts recorded right after ``RunResumed``, before the first effect's: the world the run
    goes on in (``SandboxChecked``) and the hooks run again before the step the stop cut short
    (``HookRan``). Effect ids count none of them either, and the run stays just resumed past
    them: the effect the stop cut short keeps its id, and a commit the stopped process made is
    found by its ``Ralph-Effect``, never skipped as "nothing changed"."""
    salvages: tuple[str, ...] = ()
    """What each ``RunSalvaged`` said (where from, the events kept, the damage). Effect ids
    do not count these facts: the effect whose facts the damage lost is asked for again under
    its own id, and its handler finds work already done (a commit by its ``Ralph-Effect``)."""
    completed_at: Instant | None = None
    protected_prompt: ProtectedPrompt | None = None
    response: ResponseCheck | None = None
    """The current task's structured response, once one was submitted."""
    spend: Spend = field(factory=Spend)
    """What the run's invocations used (see :class:`Spend`)."""


@final
@frozen(kw_only=True)
class Checkpoints:
    """Checkpoint bookkeeping: the checkpoint orchestration asked for, and those saved."""

    due: CheckpointTrigger | None = None
    count: int = 0
    last_sequence: int | None = None


@final
@frozen(kw_only=True)
class PipelineState:
    """The folded state of one run: the fold of its event log, and nothing but that."""

    sequence: int = 0
    """How many events have been folded; the next event's position in the log."""
    run: RunInfo | None = None
    progress: Progress = Progress()
    agent: AgentCursor = AgentCursor()
    intake: Intake = Intake()
    ledger: Ledger = Ledger()
    checkpoints: Checkpoints = Checkpoints()
    routing: Routing = field(factory=Routing)
    """A user's topology: topics waiting for a hat, the hat at work (empty otherwise)."""
    gating: Gating = field(factory=Gating)
    """The gates: the round under way at final validation, and the run's counts."""
    ladders: tuple[Rung, ...] = ()
    """Where each hat with an escalation ladder stands on it (a hat not yet bounced: none)."""
    integration: Integration | None = None
    """The completed run's branch on its way to a target (``ralph worktrees merge``)."""
    context: Context = field(factory=Context)
    """The workspace's memories and tasks as the run knows them."""
    hooks: Hooks = field(factory=Hooks)
    """Which lifecycle hooks ran, and how their failures went."""

    @property
    def phase(self) -> Phase:
        """The current phase."""
        return self.progress.phase

    @property
    def termination(self) -> TerminationReason | None:
        """Why the run ended (or is ending), if it did."""
        return self.progress.termination


def is_terminal(state: PipelineState) -> bool:
    """Whether the run has stopped (complete, or interrupted and waiting to be resumed)."""
    return state.progress.phase in TERMINAL_PHASES


def is_complete(state: PipelineState) -> bool:
    """Whether nothing is left to do: terminal, with its last checkpoint saved."""
    return state.progress.phase in TERMINAL_PHASES and state.checkpoints.due is None


def correcting(state: PipelineState) -> ResponseCheck | None:
    """The current task's malformed structured response while a correction turn is due."""
    check = state.ledger.response
    if check is None or check.valid or state.run is None:
        return None
    return check if check.failures <= state.run.loop.max_formatting_retries else None


FILE_ONLY_PROMPTS: Final = frozenset({PromptKind.COMMIT_MESSAGE, PromptKind.FORMAT_CORRECTION})
"""Prompts that ask for a file and nothing else (a commit message, a formatting correction):
they say nothing of topics, and a topic their agent publishes is noticed, never acted on (a
memory or task note, which steers nothing, is taken)."""


def task_prompt_kind(state: PipelineState) -> PromptKind | None:
    """The prompt the current task needs: its phase's (a topology's hat's in development),
    or a formatting correction's."""
    progress = state.progress
    agent = agent_of(progress.phase, progress.fixing)
    kind = None if agent is None else agent[1]
    if kind is not None and correcting(state) is not None:
        return PromptKind.FORMAT_CORRECTION
    if kind is PromptKind.DEVELOPMENT and state.routing.hat is not None:
        return PromptKind.HAT
    return kind


def reviews_claims(state: PipelineState) -> bool:
    """Whether an accepted completion claim is reviewed before final validation: the built-in
    pipeline (a topology's hats review as their triggers say) recorded with
    ``review_completion``, and review not turned off (``max_review_passes = 0``)."""
    run = state.run
    if run is None or not run.loop.review_completion or run.loop.topology is not None:
        return False
    return run.budget.max_review_passes > 0
