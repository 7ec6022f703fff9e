"""``[hats.ROLE]`` and ``[loop]``: the hat each role wears and how the loop is controlled (pure).

A hat gives a role a name, a description, the topic patterns it may publish, instructions added
to its prompts, and optionally its own agent chain, model and agent arguments. ``[loop]`` turns
on scope enforcement and sets the completion gate, cancellation, the loop detectors and the
human timeout. :meth:`LoopConfig.policy` is what ``RunStarted`` records.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final, final

from attrs import field, frozen

from pipeline.events import (
    MAX_FORMATTING_RETRIES,
    Count,
    Hat,
    Json,
    LoopPolicy,
    PatternError,
    Role,
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

    def hat(self, role: Role, schema: Json | None = None) -> Hat:
        """The hat as the log records it (``schema``: its loaded ``response_schema``)."""
        publishes = DEFAULT_PUBLISHES[role] if self.publishes is None else self.publishes
        return Hat(role, self.name or role.value, publishes, schema)


@final
@frozen(kw_only=True)
class HatsConfig:
    """``[hats]``: a table per role; a role without one wears its default hat."""

    planner: HatConfig = HatConfig()
    developer: HatConfig = HatConfig()
    reviewer: HatConfig = HatConfig()
    committer: HatConfig = HatConfig()
    fixer: HatConfig = HatConfig()

    def for_role(self, role: Role) -> HatConfig:
        """The hat configuration of ``role``."""
        hat: HatConfig = getattr(self, role.value)
        return hat


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

    def policy(self, hats: HatsConfig, schemas: Mapping[Role, Json] | None = None) -> LoopPolicy:
        """The policy ``RunStarted`` records, with the hats' loaded response ``schemas``
        (raises ValueError when a value is out of range)."""
        loaded = schemas or {}
        return LoopPolicy(
            hats=tuple(hats.for_role(role).hat(role, loaded.get(role)) for role in Role),
            enforce_hat_scope=self.enforce_hat_scope,
            completion_promise=self.completion_promise or None,
            cancellation_promise=self.cancellation_promise or None,
            required_events=self.required_events,
            stale_repeats=Count(self.stale_repeats),
            max_task_blocks=Count(self.max_task_blocks),
            max_abandoned_tasks=Count(self.max_abandoned_tasks),
            human_timeout_s=Count(self.human_timeout_s) if self.human_timeout_s else None,
            max_formatting_retries=Count(self.max_formatting_retries),
        )


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
        for pattern in hat.publishes or ():
            try:
                check_pattern(pattern)
            except PatternError as error:
                problems.append(f"{key}.publishes: malformed pattern: {error}")
        if hat.publishes is not None and not hat.publishes:
            problems.append(f"{key}.publishes: empty; give at least one pattern ('*' for any)")
        if hat.response_schema is not None and not hat.response_schema.strip():
            problems.append(f"{key}.response_schema: empty; name a built-in schema or a file")
    return problems


def check_loop(loop: LoopConfig) -> list[str]:
    """Every problem with ``[loop]``, one line each, naming the key."""
    problems: list[str] = []
    for key in ("completion_promise", "cancellation_promise"):
        topic: str = getattr(loop, key)
        if topic and not _TOPIC.fullmatch(topic):
            problems.append(f"loop.{key}: {topic!r} is not a topic (letters, digits, _ . : -)")
    if loop.completion_promise and loop.completion_promise == loop.cancellation_promise:
        problems.append("loop.cancellation_promise: the same topic as completion_promise")
    for topic in loop.required_events:
        if not _TOPIC.fullmatch(topic):
            problems.append(f"loop.required_events: {topic!r} is not a topic")
    # The integers' ranges are checked with every other setting's (pipeline.config._bounds).
    return problems
