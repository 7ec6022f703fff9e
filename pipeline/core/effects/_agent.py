"""The effects around an agent's work: its prompt, its invocation, a backoff before a retry,
and collecting its report (pure)."""

from __future__ import annotations

from typing import final

from attrs import field, frozen

from pipeline.core._prompt_records import Publishing, Standing
from pipeline.core.effects._id import EffectId
from pipeline.core.state.context import Memory, Task
from pipeline.core.state.model import MalformedLineNote, ResponseCheck
from pipeline.core.state.notices import Notice
from pipeline.core.state.routing import RoutedTopic
from pipeline.events import DevelopmentIterationCompleted, PipelineEvent
from pipeline.events.values import (
    COUNT_VALIDATOR,
    ORDINAL_VALIDATOR,
    AgentName,
    Count,
    DurationMs,
    Instant,
    Json,
    Ordinal,
    PromptKind,
    Role,
)

__all__ = [
    "BackOff",
    "CollectReport",
    "InvokeAgent",
    "MaterializePrompt",
    "PromptContext",
    "Publishing",
    "Standing",
    "WaitForLimitReset",
    "ends_after_topics",
]


@final
@frozen(kw_only=True)
class PromptContext:
    """The workspace's memories and tasks a working prompt carries (chosen from the state
    by the rules of ``docs/architecture/context.md``)."""

    memories: tuple[Memory, ...]
    memories_left_out: Count = field(validator=COUNT_VALIDATOR)
    """Memories for this hat that did not fit the prompt's budget."""
    tasks: tuple[Task, ...]
    """The tasks not done yet."""
    tasks_left_out: Count = field(validator=COUNT_VALIDATOR)
    finish_tasks: bool
    """Whether the completion promise waits for every task to be done."""


@final
@frozen(kw_only=True)
class MaterializePrompt:
    """Render the ``kind`` prompt for ``role`` into the workspace."""

    effect_id: EffectId
    kind: PromptKind
    role: Role
    iteration: Count = field(validator=COUNT_VALIDATOR)
    review_pass: Count = field(validator=COUNT_VALIDATOR)
    last_error: str | None
    """The latest failure the run recorded (a dev-fix prompt is about it)."""
    feedback: tuple[MalformedLineNote, ...]
    """Malformed lines of the events file since the last prompt: the agent must learn of them."""
    feedback_omitted: Count = field(validator=COUNT_VALIDATOR)
    """How many more malformed lines there were than ``feedback`` lists."""
    notices: tuple[Notice, ...]
    """What ralph must tell the agent: scope violations, a refused completion, abandoned
    tasks, a person's answer or a question's timeout."""
    response_schema: Json | None
    """The schema the role's structured response must meet (None: the role gives none)."""
    correction: ResponseCheck | None
    """For a ``FORMAT_CORRECTION`` prompt: the malformed response and what is wrong with it."""
    publishing: Publishing | None = None
    """How the agent publishes topics (None: this prompt does not ask it to, e.g. a commit
    message or a formatting correction)."""
    hat: str | None = None
    """The hat of a user's topology the prompt is for (a ``HAT`` prompt, or its correction)."""
    trigger: RoutedTopic | None = None
    """The topic that woke ``hat``, with its payload."""
    context: PromptContext | None = None
    """The memories and tasks the prompt carries (None: a prompt that takes none, such as a
    commit message or a formatting correction)."""
    standing: Standing | None = None
    """Where the run stands, for the prompt's MCP card (None: a run not started)."""


@final
@frozen(kw_only=True)
class InvokeAgent:
    """Run ``agent`` in ``role`` on the ``prompt_kind`` prompt.

    ``attempt`` counts the task's attempts (first try, retries, fallbacks: 1, 2, ...); a
    formatting-correction turn carries the number of the attempt whose response it corrects.
    """

    effect_id: EffectId
    role: Role
    agent: AgentName
    attempt: Ordinal = field(validator=ORDINAL_VALIDATOR)
    prompt_kind: PromptKind
    iteration: Count = field(validator=COUNT_VALIDATOR)
    review_pass: Count = field(validator=COUNT_VALIDATOR)
    events_offset: Count = field(validator=COUNT_VALIDATOR)
    """Bytes of the events file already read into the log: read on from here afterwards."""
    events_lines: Count = field(validator=COUNT_VALIDATOR)
    """Lines of the events file already read (the next line is ``events_lines + 1``)."""
    response_schema: Json | None
    """The schema of the structured response (``response.json``) the agent answers with, which
    the handler judges before its role's report is collected (None: the role gives none)."""
    hat: str | None = None
    """The hat of a user's topology the agent works as (its model and arguments)."""
    model: str | None = None
    """The model of the rung the hat's escalation ladder stands on (None: the hat's own)."""


@final
@frozen(kw_only=True)
class BackOff:
    """Wait before retrying ``role``: the handler picks a delay from 0 to ``ceiling_ms``."""

    effect_id: EffectId
    role: Role
    ceiling_ms: DurationMs = field(validator=COUNT_VALIDATOR)


@final
@frozen(kw_only=True)
class WaitForLimitReset:
    """Wait until ``until``, the reset ``role``'s provider told of, before its next attempt."""

    effect_id: EffectId
    role: Role
    until: Instant


@final
@frozen(kw_only=True)
class CollectReport:
    """Read the role's report after its structured response was accepted."""

    effect_id: EffectId
    role: Role
    agent: AgentName
    """The agent whose report it is (named when the report is rejected)."""
    prompt_kind: PromptKind
    iteration: Count = field(validator=COUNT_VALIDATOR)
    review_pass: Count = field(validator=COUNT_VALIDATOR)


def ends_after_topics(
    effect: InvokeAgent, facts: tuple[PipelineEvent, ...]
) -> tuple[PipelineEvent, ...]:
    """``facts`` of ``effect``'s invocation in the order the log records them: as they are,
    except that a topology hat's activation ends (``DevelopmentIterationCompleted``) after the
    topics it published, which decide the hat that works next."""
    if effect.prompt_kind is not PromptKind.HAT:
        return facts
    ends = tuple(f for f in facts if isinstance(f, DevelopmentIterationCompleted))
    if not ends:
        return facts
    return (*(f for f in facts if not isinstance(f, DevelopmentIterationCompleted)), *ends)
