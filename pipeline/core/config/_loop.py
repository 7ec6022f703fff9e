"""``[hats.NAME]`` and ``[loop]``: the hats agents wear and how the loop is controlled (pure).

A hat gives a role a name, a description, the topic patterns it may publish, instructions added
to its prompts, and optionally its own agent chain, model and agent arguments. A hat with
``triggers`` is a hat of the user's own topology instead: any name, woken by the topics that
match its triggers (see ``docs/architecture/topologies.md``); one such hat makes the run follow
the topology instead of the built-in plan, develop, review sequence. ``[loop]`` turns on scope
enforcement and sets the completion gate, cancellation, the loop detectors, the human timeout
and a topology's starting event. :meth:`RalphConfig.loop_policy` makes of them what
``RunStarted`` records.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final, final

from attrs import field, frozen

from pipeline.core.config._escalation import EscalateAfter, ladder_problems
from pipeline.events import (
    MAX_FORMATTING_RETRIES,
    STARTING_EVENT,
    AgentName,
    Count,
    Hat,
    Json,
    PatternError,
    Role,
    WorkHat,
    check_pattern,
)

__all__ = [
    "DEFAULT_PUBLISHES",
    "HatConfig",
    "HatsConfig",
    "LoopConfig",
    "check_hats",
    "check_loop",
]

DEFAULT_PUBLISHES: Final[Mapping[Role, tuple[str, ...]]] = types.MappingProxyType(
    {
        Role.PLANNER: ("plan.**", "task.**", "human.interact"),
        Role.DEVELOPER: ("build.**", "task.**", "human.interact"),
        Role.REVIEWER: ("review.**", "human.interact"),
        Role.COMMITTER: ("commit.**",),
        Role.FIXER: ("fix.**", "human.interact"),
    }
)
"""The topics each role's hat may publish unless ``publishes`` says otherwise."""

_TOPIC = re.compile(r"[A-Za-z0-9_.:-]+")
_HAT_NAME = re.compile(r"[A-Za-z0-9_:-]+")


@final
@frozen(kw_only=True)
class HatConfig:
    """``[hats.ROLE]``: the hat one role wears."""

    name: str | None = None
    """Shown in scope violations (``<name>.scope_violation``); default: the role's name."""
    description: str = ""
    publishes: tuple[str, ...] | None = None
    """Topic patterns; None: :data:`DEFAULT_PUBLISHES`."""
    instructions: str = ""
    """Added to every prompt of the role."""
    chain: tuple[str, ...] = field(factory=tuple)
    """The role's agent chain (instead of ``[chains] ROLE``)."""
    model: str | None = None
    """The model for this role's invocations, whichever agent runs them."""
    args: tuple[str, ...] = field(factory=tuple)
    """Appended to the agent's arguments for this role."""
    response_schema: str | None = None
    """The role answers with a structured response meeting this JSON Schema: a built-in name
    (``agent-response``) or a file, relative to the workspace."""
    triggers: tuple[str, ...] | None = None
    """Topic patterns that wake the hat: a hat of the user's topology (None: a role's hat)."""
    default_publishes: str | None = None
    """A topology hat's topic ralph publishes for it when nothing waits after its work."""
    max_activations: int = 0
    """How often a topology hat may work in a run (0: no limit)."""
    escalate: tuple[str, ...] = field(factory=tuple)
    """The models the hat moves up to when its work bounces (see ``_escalation``)."""
    escalate_after: EscalateAfter = field(factory=EscalateAfter)
    """How many bounces of each kind move it up a rung."""
    review_topics: tuple[str, ...] = field(factory=tuple)
    """A topology hat's topics that bring its work back from review."""
    step_down: bool = False
    """Whether a success moves the hat down a rung."""

    def work_hat(self, name: str, schema: Json | None) -> WorkHat:
        """The topology hat called ``name`` as the log records it (``schema``: its loaded
        ``response_schema``)."""
        return WorkHat(
            name=name,
            triggers=self.triggers or (),
            publishes=self.publishes or (),
            default_publishes=self.default_publishes,
            max_activations=Count(self.max_activations),
            chain=tuple(AgentName(agent) for agent in self.chain),
            response_schema=schema,
        )

    def hat(self, role: Role, schema: Json | None = None) -> Hat:
        """The hat as the log records it (``schema``: its loaded ``response_schema``)."""
        publishes = DEFAULT_PUBLISHES[role] if self.publishes is None else self.publishes
        return Hat(
            role=role, name=self.name or role.value, publishes=publishes, response_schema=schema
        )


@final
@frozen(kw_only=True)
class HatsConfig:
    """``[hats]``: a table per role; a role without one wears its default hat."""

    planner: HatConfig = HatConfig()
    developer: HatConfig = HatConfig()
    reviewer: HatConfig = HatConfig()
    committer: HatConfig = HatConfig()
    fixer: HatConfig = HatConfig()
    work: Mapping[str, HatConfig] = field(factory=dict)
    """The hats of the user's topology (those with ``triggers``), by name, in file order."""

    def for_role(self, role: Role) -> HatConfig:
        """The hat configuration of ``role``."""
        hat: HatConfig = getattr(self, role.value)
        return hat

    @property
    def topology(self) -> bool:
        """Whether the hats make a topology of the user's own (some hat has triggers)."""
        return bool(self.work)


@final
@frozen(kw_only=True)
class LoopConfig:
    """``[loop]``: scope enforcement, the completion gate, cancellation, detectors, humans."""

    enforce_hat_scope: bool = False
    completion_promise: str = "LOOP_COMPLETE"
    """The topic that claims the work is done ("" turns the promise off)."""
    cancellation_promise: str = ""
    """The topic that cancels the run cleanly ("" : off; typically ``loop.cancel``)."""
    required_events: tuple[str, ...] = field(factory=tuple)
    """Topics that must have been seen before the completion promise is accepted."""
    stale_repeats: int = 3
    max_task_blocks: int = 3
    max_abandoned_tasks: int = 3
    human_timeout_s: int = 600
    """How long a question to a person waits (0: ``human.interact`` is a plain topic)."""
    max_formatting_retries: int = MAX_FORMATTING_RETRIES
    """Correction turns after a malformed structured response, before a person is needed."""
    starting_event: str = STARTING_EVENT
    """A topology's first topic: the hat it wakes works first."""
    coordinator: str = ""
    """A topology hat that gets the topics no hat triggers on ("": they are dropped)."""
    commits: bool = True
    """Whether a topology's work is committed after each activation (false: read-only)."""
    review_completion: bool = True
    """Whether an accepted completion claim in the built-in pipeline is reviewed before the
    final check (false: straight to it; ``max_review_passes = 0`` turns review off)."""


def check_hats(hats: HatsConfig) -> list[str]:
    """Every problem with the hats, one line each, naming the hat and the key."""
    problems: list[str] = []
    for role in Role:
        hat = hats.for_role(role)
        key = f"hats.{role.value}"
        if hat.name is not None and not _HAT_NAME.fullmatch(hat.name):
            problems.append(
                f"{key}.name: {hat.name!r} must be letters, digits, _ : - (it names topics)"
            )
        problems.extend(_shared_problems(key, hat, ("publishes",)))
        if hat.publishes is not None and not hat.publishes:
            problems.append(f"{key}.publishes: empty; give at least one pattern ('*' for any)")
        for extra in ("default_publishes", "max_activations"):
            if getattr(hat, extra) != getattr(_PLAIN, extra):
                problems.append(f"{key}.{extra}: only a hat with triggers has it")
        if hats.topology and role in _PIPELINE_ONLY and hat != _PLAIN:
            problems.append(
                f"{key}: the {role.value} works in the built-in pipeline only, and the hats with "
                "triggers make this a topology of your own; give it triggers to make it one "
                "of the topology's hats, or leave it out"
            )
        problems.extend(ladder_problems(key, hat, role))
    for name, hat in hats.work.items():
        problems.extend(_work_hat_problems(name, hat))
    return problems


_PLAIN = HatConfig()
_PIPELINE_ONLY = frozenset({Role.PLANNER, Role.DEVELOPER, Role.REVIEWER})
"""The roles whose phases a topology replaces (the committer and the fixer still work)."""


def _work_hat_problems(name: str, hat: HatConfig) -> list[str]:
    key = f"hats.{name}"
    problems: list[str] = []
    if not _HAT_NAME.fullmatch(name):
        problems.append(f"{key}: the name must be letters, digits, _ : - (it names topics)")
    if hat.name is not None:
        problems.append(f"{key}.name: a hat with triggers is named by its table ({name!r})")
    if not hat.triggers:
        problems.append(f"{key}.triggers: empty; give at least one topic pattern")
    problems.extend(_shared_problems(key, hat, ("triggers", "publishes", "review_topics")))
    default = hat.default_publishes
    if default is not None and not _is_topic(default):
        problems.append(f"{key}.default_publishes: {default!r} is not a topic")
    return [*problems, *ladder_problems(key, hat, None)]


def _shared_problems(key: str, hat: HatConfig, pattern_fields: tuple[str, ...]) -> list[str]:
    """The problems a role's hat and a topology's hat share: a malformed pattern in one of
    ``pattern_fields``, an empty ``response_schema``."""
    problems = []
    for field_name in pattern_fields:
        for pattern in getattr(hat, field_name) or ():
            try:
                check_pattern(pattern)
            except PatternError as error:
                problems.append(f"{key}.{field_name}: malformed pattern: {error}")
    if hat.response_schema is not None and not hat.response_schema.strip():
        problems.append(f"{key}.response_schema: empty; name a built-in schema or a file")
    return problems


def _is_topic(text: str) -> bool:
    return bool(_TOPIC.fullmatch(text)) and "" not in text.split(".")


def check_loop(loop: LoopConfig, hats: HatsConfig) -> list[str]:
    """Every problem with ``[loop]``, one line each, naming the key (``hats``: the hats it
    refers to; a topology's settings need a topology)."""
    problems: list[str] = []
    topology = hats.topology
    if not _is_topic(loop.starting_event):
        problems.append(f"loop.starting_event: {loop.starting_event!r} is not a topic")
    if loop.coordinator and loop.coordinator not in hats.work:
        problems.append(
            f"loop.coordinator: {loop.coordinator!r} is no hat with triggers"
            + (f" ({', '.join(hats.work)})" if hats.work else "")
        )
    if not topology:
        for key, default in (("starting_event", STARTING_EVENT), ("commits", True)):
            if getattr(loop, key) != default:
                problems.append(
                    f"loop.{key}: only a topology of your own has it (give hats triggers)"
                )
    if topology and not loop.review_completion:
        problems.append(
            "loop.review_completion: only the built-in pipeline has it (a topology's hats "
            "review as its triggers say)"
        )
    for key in ("completion_promise", "cancellation_promise"):
        topic: str = getattr(loop, key)
        if topic and not _TOPIC.fullmatch(topic):
            problems.append(f"loop.{key}: {topic!r} is not a topic (letters, digits, _ . : -)")
    if loop.completion_promise and loop.completion_promise == loop.cancellation_promise:
        problems.append("loop.cancellation_promise: the same topic as completion_promise")
    for topic in loop.required_events:
        if not _TOPIC.fullmatch(topic):
            problems.append(f"loop.required_events: {topic!r} is not a topic")
    # The integers' ranges are checked with every other setting's (pipeline.core.config._bounds).
    return problems
