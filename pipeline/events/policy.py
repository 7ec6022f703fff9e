"""The loop policy a run records when it starts: hats and their topic scopes, the completion
gate, cancellation, loop detectors, the human timeout and the hooks (pure data).

``RunStarted`` carries a :class:`LoopPolicy`, so replaying a log never needs the configuration:
the reducer judges every published topic against the policy the run started with.

Topic patterns: ``*`` alone matches every topic. Otherwise a pattern and a topic are split on
``.``; each segment ``*`` matches one topic segment, ``**`` any number (none included), and any
other segment must equal the topic's. So ``build.*`` matches ``build.done`` but not
``build.x.done``; ``build.**`` matches ``build``, ``build.done`` and ``build.x.done``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Final, final

from attrs import Attribute, field, frozen
from attrs.validators import optional

from pipeline import PipelineError
from pipeline.events.escalation import Ladder
from pipeline.events.hook_policy import HookAction, HookPoint, HookSpec
from pipeline.events.limit_policy import LimitPolicy
from pipeline.events.notes import ContextPolicy
from pipeline.events.screen import PostconditionPolicy, TamperPolicy
from pipeline.events.values import (
    COUNT_VALIDATOR,
    AgentName,
    Count,
    GateAction,
    GateBoundary,
    GatePin,
    Json,
    Role,
)

__all__ = [
    "CONNECTION_REFUSED_TOPIC",
    "CONTEXT_REFUSED_TOPIC",
    "GIT_RESTORED_TOPIC",
    "HUMAN_GUIDANCE_TOPIC",
    "HUMAN_INTERACT_TOPIC",
    "HUMAN_RESPONSE_TOPIC",
    "HUMAN_TIMEOUT_TOPIC",
    "MAX_FORMATTING_RETRIES",
    "STARTING_EVENT",
    "TASK_ABANDONED_TOPIC",
    "TASK_BLOCKED_TOPIC",
    "TASK_COMPLETE_TOPIC",
    "TASK_RESUME_TOPIC",
    "TOPIC_NOT_ASKED_TOPIC",
    "GateSpec",
    "Hat",
    "LoopPolicy",
    "PatternError",
    "Topology",
    "WorkHat",
    "check_pattern",
    "in_scope",
    "specificity",
    "topic_matches",
]

CONNECTION_REFUSED_TOPIC: Final = "ralph.connection_refused"
"""The notice telling the agent the sandbox refused its connections to a host."""

CONTEXT_REFUSED_TOPIC: Final = "ralph.context_refused"
"""The notice telling an agent its memory or task note was not taken, and why."""

TOPIC_NOT_ASKED_TOPIC: Final = "ralph.topic_not_asked"
"""The notice telling an agent a topic it published in a turn that asked for a file only (a
commit message, a formatting correction) was not acted on."""

GIT_RESTORED_TOPIC: Final = "ralph.git_restored"
"""The notice telling the agent ralph undid its changes to the repository's git files."""

HUMAN_INTERACT_TOPIC: Final = "human.interact"
"""An agent asks a person a question (the payload: the question, or ``{"question": ...}``)."""
HUMAN_RESPONSE_TOPIC: Final = "human.response"
"""The topic-log entry (and seen topic) for a person's answer."""
HUMAN_GUIDANCE_TOPIC: Final = "human.guidance"
"""The notice (and topic-log entry) carrying a person's guidance to a hat's next prompt."""
HUMAN_TIMEOUT_TOPIC: Final = "human.timeout"
"""The topic-log entry (and seen topic) for a question nobody answered in time."""
TASK_BLOCKED_TOPIC: Final = "build.blocked"
"""An agent reports it is blocked on a task (the payload names the task)."""
TASK_ABANDONED_TOPIC: Final = "build.task.abandoned"
"""The topic-log entry for a task abandoned after being blocked too often."""
TASK_COMPLETE_TOPIC: Final = "task.complete"
"""An agent reports a task done; exempt from stale-loop detection (it repeats by nature)."""
TASK_RESUME_TOPIC: Final = "task.resume"
"""The notice given to the agent when its completion promise was refused."""

STARTING_EVENT: Final = "task.start"
"""The topic a topology's run starts with unless ``[loop] starting_event`` names another."""

MAX_FORMATTING_RETRIES: Final = 2
"""Correction turns after a malformed structured response unless the config says otherwise:
the original call plus these, three calls in all."""

_SEGMENT = re.compile(r"[A-Za-z0-9_:-]+")


class PatternError(PipelineError, ValueError):
    """A topic pattern is malformed; the message names the pattern and what is wrong."""


def check_pattern(pattern: str) -> None:
    """Raise :class:`PatternError` unless ``pattern`` is a well-formed topic pattern."""
    if pattern == "*":
        return
    if not pattern:
        raise PatternError("empty pattern")
    for segment in pattern.split("."):
        if segment in ("*", "**"):
            continue
        if not segment:
            raise PatternError(f"{pattern!r} has an empty segment")
        if "*" in segment:
            raise PatternError(
                f"{pattern!r}: '*' must be a whole segment ('build.*', not 'build*')"
            )
        if not _SEGMENT.fullmatch(segment):
            raise PatternError(
                f"{pattern!r}: segment {segment!r} has characters other than "
                "letters, digits and _ : -"
            )


def _match(pattern: tuple[str, ...], topic: tuple[str, ...]) -> bool:
    if not pattern:
        return not topic
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, topic[skip:]) for skip in range(len(topic) + 1))
    if not topic:
        return False
    return (head == "*" or head == topic[0]) and _match(rest, topic[1:])


@lru_cache(maxsize=4096)
def topic_matches(pattern: str, topic: str) -> bool:
    """Whether ``topic`` matches ``pattern`` (see the module's documentation)."""
    if pattern == "*":
        return True
    if "*" not in pattern:
        return pattern == topic
    return _match(tuple(pattern.split(".")), tuple(topic.split(".")))


@lru_cache(maxsize=4096)
def in_scope(patterns: tuple[str, ...], topic: str) -> bool:
    """Whether ``topic`` matches any of ``patterns``."""
    return any(topic_matches(pattern, topic) for pattern in patterns)


def specificity(pattern: str) -> int:
    """How specific a trigger is, most specific first: 0 a topic itself (``build.done``),
    1 a pattern of ``*`` segments only (``build.*``), 2 one with ``**`` (``build.**``),
    3 ``*`` alone (every topic)."""
    if pattern == "*":
        return 3
    segments = pattern.split(".")
    if "**" in segments:
        return 2
    return 1 if "*" in segments else 0


def _patterns(_instance: object, attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    for pattern in value:
        try:
            check_pattern(pattern)
        except PatternError as error:
            raise ValueError(f"{attribute.name}: {error}") from error


@final
@frozen(kw_only=True)
class Hat:
    """The hat a role wears: its name (shown in scope violations) and the topics it may publish."""

    role: Role
    name: str
    publishes: tuple[str, ...] = field(validator=_patterns)
    response_schema: Json | None = None
    """The JSON Schema the role's structured response must meet (None: it gives none)."""


def _topic(_instance: object, attribute: Attribute[Any], value: str | None) -> None:
    if value is not None and (not _TOPIC.fullmatch(value) or "" in value.split(".")):
        raise ValueError(f"{attribute.name}: {value!r} is not a topic")


_TOPIC = re.compile(r"[A-Za-z0-9_.:-]+")


def _some_patterns(instance: object, attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    if not value:
        raise ValueError(f"{attribute.name}: a hat of a topology needs at least one pattern")
    _patterns(instance, attribute, value)


@final
@frozen(kw_only=True)
class WorkHat:
    """A hat of a user's topology: the topics that wake it (``triggers``), those it may
    publish, and what ralph publishes for it when it publishes nothing routable."""

    name: str = field(validator=lambda _i, _a, v: _segment(v))
    triggers: tuple[str, ...] = field(validator=_some_patterns)
    publishes: tuple[str, ...] = field(validator=_patterns)
    default_publishes: str | None = field(default=None, validator=_topic)
    """Routed when nothing is pending after this hat's activation (None: the run stalls)."""
    max_activations: Count = field(default=Count(0), validator=COUNT_VALIDATOR)
    """Activations this hat may have in a run (0: no limit); past it, its topics are dropped
    and ``<name>.exhausted`` is published once."""
    chain: tuple[AgentName, ...] = ()
    """The hat's own agent chain (empty: the developer's)."""
    response_schema: Json | None = None
    """The JSON Schema the hat's structured response must meet (None: it gives none)."""


def _segment(name: str) -> None:
    if not _SEGMENT.fullmatch(name):
        raise ValueError(f"hat name {name!r}: letters, digits, _ : - only (it names topics)")


def _distinct_hats(
    _instance: object, _attribute: Attribute[Any], value: tuple[WorkHat, ...]
) -> None:
    names = [hat.name for hat in value]
    if not names:
        raise ValueError("hats: a topology needs at least one hat")
    if len(set(names)) != len(names):
        raise ValueError(f"hats: a name is given twice: {sorted(names)}")


@final
@frozen(kw_only=True)
class Topology:
    """A workflow of the user's own: hats woken by the topics agents publish, instead of the
    built-in plan, develop, review sequence. The run starts with ``starting_event`` pending."""

    hats: tuple[WorkHat, ...] = field(validator=_distinct_hats)
    starting_event: str = field(default=STARTING_EVENT, validator=_topic)
    coordinator: str | None = None
    """The hat that gets topics no hat triggers on (None: they are reported and dropped)."""
    commits: bool = True
    """Whether the work of each activation is committed (False: a read-only workflow)."""

    def hat(self, name: str) -> WorkHat | None:
        """The hat called ``name``, if the topology has one."""
        for hat in self.hats:
            if hat.name == name:
                return hat
        return None

    def waking(self, topic: str) -> WorkHat | None:
        """The hat ``topic`` wakes: of the hats with a trigger matching it, the one whose best
        matching trigger is the most specific (:func:`specificity`), ties broken by name;
        None when no trigger matches."""
        best: tuple[int, str] | None = None
        chosen: WorkHat | None = None
        for hat in self.hats:
            ranks = [specificity(p) for p in hat.triggers if topic_matches(p, topic)]
            if ranks and (best is None or (min(ranks), hat.name) < best):
                best, chosen = (min(ranks), hat.name), hat
        return chosen


def _gate_name(_instance: object, _attribute: Attribute[Any], value: str) -> None:
    if not _GATE_NAME.fullmatch(value):
        raise ValueError(f"gate name {value!r}: 1 to 64 letters, digits, _ and -")


_GATE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _argv(_instance: object, _attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    if not value or not value[0].strip():
        raise ValueError("a gate's argv must name a program")


def _boundaries(_instance: object, _attribute: Attribute[Any], value: tuple[object, ...]) -> None:
    if not value or len(set(value)) != len(value):
        raise ValueError("a gate runs at one or more boundaries, each named once")


def _topic_patterns(_instance: object, _attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    for pattern in value:
        check_pattern(pattern)


@final
@frozen(kw_only=True)
class GateSpec:
    """A gate: a command ralph runs in the workspace (never in an agent's session) whose exit
    status 0 passes, where it runs, and what a failure does."""

    name: str = field(validator=_gate_name)
    argv: tuple[str, ...] = field(validator=_argv)
    timeout_s: Count = field(validator=COUNT_VALIDATOR)
    inactivity_timeout_s: Count | None = field(default=None, validator=optional(COUNT_VALIDATOR))
    on: tuple[GateBoundary, ...] = field(default=(GateBoundary.FINAL,), validator=_boundaries)
    on_failure: GateAction = GateAction.BLOCK
    topics: tuple[str, ...] = field(default=(), validator=_topic_patterns)
    """The topic patterns of ``on = topic``: a hat's activation that publishes a matching
    topic runs the gate before the topic reaches any hat."""

    def __attrs_post_init__(self) -> None:
        if (GateBoundary.TOPIC in self.on) != bool(self.topics):
            raise ValueError("a gate runs on topics exactly when it names topic patterns")

    def on_topic(self, topic: str) -> bool:
        """Whether ``topic`` is one this gate runs on."""
        return any(topic_matches(pattern, topic) for pattern in self.topics)


def _ladders(_instance: object, _attribute: Attribute[Any], value: tuple[Ladder, ...]) -> None:
    names = [ladder.hat for ladder in value]
    if len(set(names)) != len(names):
        raise ValueError(f"ladders: a hat has two: {sorted(names)}")
    for ladder in value:
        _topic_patterns(ladder, _attribute, ladder.review_topics)


@final
@frozen(kw_only=True)
class LoopPolicy:
    """How the run controls its loop. A threshold of 0 turns its detector off.
    ``completion_promise`` and ``cancellation_promise`` are topics; None turns them off.
    ``human_timeout_s`` None means ``human.interact`` is a topic like any other."""

    hats: tuple[Hat, ...]
    enforce_hat_scope: bool
    completion_promise: str | None
    cancellation_promise: str | None
    required_events: tuple[str, ...]
    stale_repeats: Count = field(validator=COUNT_VALIDATOR)
    """The same (topic, hat, payload) this many times in a row ends the run ``loop_stale``."""
    max_task_blocks: Count = field(validator=COUNT_VALIDATOR)
    """A task reported blocked this many times is abandoned."""
    max_abandoned_tasks: Count = field(validator=COUNT_VALIDATOR)
    """This many abandonments end the run ``loop_thrashing``."""
    human_timeout_s: Count | None = field(validator=optional(COUNT_VALIDATOR))
    max_formatting_retries: Count = field(
        default=Count(MAX_FORMATTING_RETRIES), validator=COUNT_VALIDATOR
    )
    """Correction turns after a malformed structured response (the original call plus these)."""
    topology: Topology | None = None
    """The user's workflow of hats routed by topics (None: the built-in pipeline)."""
    gates: tuple[GateSpec, ...] = ()
    """The gates a completion must pass, in the order they run (none before schema 10)."""
    tamper: TamperPolicy | None = None
    """The tamper screen run before the gates (None: off; always None before schema 11)."""
    postconditions: PostconditionPolicy | None = None
    """What the finished work must hold before completion (None: nothing; none before 11)."""
    limits: LimitPolicy | None = None
    """What the run does about its providers' limits (None: the defaults; none before 13)."""
    ladders: tuple[Ladder, ...] = field(default=(), validator=_ladders)
    """The hats' escalation ladders, one per hat at most (none before schema 14)."""
    context: ContextPolicy | None = None
    """How prompts carry memories, if completion waits for tasks (None: defaults; before 19)."""
    hooks: tuple[HookSpec, ...] = ()
    """The lifecycle hooks and notifications, in order (none before schema 19)."""
    pin: GatePin = GatePin.OFF
    """Gates and blocking hooks pinned to the run's base, or not (off before schema 20)."""
    review_completion: bool = False
    """Whether the built-in pipeline reviews an accepted completion claim before final
    validation (False: straight to it, as every run recorded before schema 20 did)."""
    file_only_turns: bool = False
    """Whether a turn whose prompt asks for a file only (a commit message, a formatting
    correction) has no topic acted on but memory and task notes (False: every topic acted on,
    as every run recorded before schema 21 was)."""

    def hooks_at(self, point: HookPoint) -> tuple[HookSpec, ...]:
        """The hooks that run at ``point``, in order."""
        return tuple(hook for hook in self.hooks if hook.point is point)

    @property
    def screens(self) -> bool:
        """Whether final validation screens the run's changes before its gates."""
        return self.tamper is not None or self.postconditions is not None

    @property
    def pins(self) -> bool:
        """Whether the run has checks to pin to its base: ``pin = "base"`` and a gate or a
        blocking hook (a run with neither records no base for them)."""
        blocking = any(hook.on_error is HookAction.BLOCK for hook in self.hooks)
        return self.pin is GatePin.BASE and (bool(self.gates) or blocking)

    def gate(self, name: str) -> GateSpec | None:
        """The gate called ``name``, if the policy has one."""
        for gate in self.gates:
            if gate.name == name:
                return gate
        return None

    @classmethod
    def off(cls) -> LoopPolicy:
        """No hats, no promises, no detectors: the policy of runs recorded before schema 4."""
        return cls(
            hats=(),
            enforce_hat_scope=False,
            completion_promise=None,
            cancellation_promise=None,
            required_events=(),
            stale_repeats=Count(0),
            max_task_blocks=Count(0),
            max_abandoned_tasks=Count(0),
            human_timeout_s=None,
            max_formatting_retries=Count(0),
        )

    def ladder(self, hat: str) -> Ladder | None:
        """The escalation ladder of ``hat`` (a role's name or a topology hat's), if any."""
        for ladder in self.ladders:
            if ladder.hat == hat:
                return ladder
        return None

    def hat(self, role: Role) -> Hat | None:
        """The hat ``role`` wears, if the policy names one."""
        for hat in self.hats:
            if hat.role is role:
                return hat
        return None
