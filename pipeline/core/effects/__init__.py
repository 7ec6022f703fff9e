"""Effects: what orchestration asks a handler to do next (pure data).

``Effect`` is a closed union like ``PipelineEvent``. Every effect carries an ``effect_id`` derived
from the state it was decided from (``<run id>:<sequence>``), so that a handler resumed after a
crash can recognise work it may already have done.
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from typing import Final, TypeAlias, final, get_args

from attrs import field, frozen
from attrs.validators import in_

from pipeline.core.effects._agent import (
    BackOff,
    CollectReport,
    InvokeAgent,
    MaterializePrompt,
    PromptContext,
    Publishing,
    Standing,
    WaitForLimitReset,
    ends_after_topics,
)
from pipeline.core.effects._id import EffectId
from pipeline.core.state.phase import Phase
from pipeline.core.state.spend import SpendLine
from pipeline.events import (
    DevelopmentIterationStarted,
    FinalizingStarted,
    FixAttemptStarted,
    HatActivated,
    PipelineEvent,
    PlanningStarted,
    ReviewPassStarted,
)
from pipeline.events.hook_policy import HookSpec
from pipeline.events.policy import GateSpec
from pipeline.events.screen import PostconditionPolicy, ScreenScope, TamperPolicy
from pipeline.events.values import (
    COUNT_VALIDATOR,
    FILE_MODE_VALIDATOR,
    OPTIONAL_COUNT_VALIDATOR,
    CheckpointTrigger,
    Count,
    GateBoundary,
    Instant,
    Json,
    LogPosition,
    Ordinal,
    QuestionId,
    Role,
    TerminationReason,
)

__all__ = [
    "BEGUN_PHASES",
    "EFFECT_TAGS",
    "AbortRebase",
    "BackOff",
    "Begin",
    "CollectReport",
    "CompleteRun",
    "CreateCommit",
    "Effect",
    "EffectId",
    "InvokeAgent",
    "MaterializePrompt",
    "PromptContext",
    "Publishing",
    "Rebase",
    "RequireHuman",
    "RestorePromptPermissions",
    "RunGate",
    "RunHook",
    "SaveCheckpoint",
    "ScreenChanges",
    "Standing",
    "StartRun",
    "Terminate",
    "TriggerDevFix",
    "ValidateFinalState",
    "WaitForHuman",
    "WaitForLimitReset",
    "WriteCompletionMarker",
    "ends_after_topics",
    "is_redoable",
    "measures_runtime",
    "started",
]


@final
@frozen(kw_only=True)
class StartRun:
    """Start the run: read the configuration and prompt, make the run id, report ``RunStarted``."""

    effect_id: EffectId


BEGUN_PHASES: Final = frozenset({Phase.PLANNING, Phase.DEVELOPMENT, Phase.REVIEW, Phase.FINALIZING})
"""The phases whose task starts with a fact of its own, recorded by a :class:`Begin`."""


@final
@frozen(kw_only=True)
class Begin:
    """Record that ``phase``'s task begins: planning, development iteration ``iteration`` (in
    a user's topology: hat ``hat`` woken by ``topic``, as the state routed it), review pass
    ``review_pass`` or, ``fixing``, the fix of its issues, or finalization. :func:`started`
    is the fact that records it, whatever world carries it out."""

    effect_id: EffectId
    phase: Phase = field(validator=in_(BEGUN_PHASES))
    fixing: bool = False
    iteration: Count = field(default=Count(0), validator=COUNT_VALIDATOR)
    review_pass: Count = field(default=Count(0), validator=COUNT_VALIDATOR)
    hat: str | None = None
    topic: str | None = None


@final
@frozen(kw_only=True)
class RunGate:
    """Run gate ``gate``'s command ``argv`` in the workspace (at ``boundary``) within its
    timeouts, and report its start and how it ended. With ``pin_base``, it runs in a scratch
    copy of the work tree whose tests and test configuration (``test_paths`` besides the
    built-in patterns) and the files ``argv`` names are as commit ``pin_base`` has them."""

    effect_id: EffectId
    gate: str
    boundary: GateBoundary
    argv: tuple[str, ...]
    timeout_s: Count = field(validator=COUNT_VALIDATOR)
    inactivity_timeout_s: Count | None = field(default=None, validator=OPTIONAL_COUNT_VALIDATOR)
    pin_base: str | None = None
    test_paths: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class RunHook:
    """Run lifecycle hook ``hook`` in the workspace, telling it ``input`` (where the run
    stands, decided at ``sequence``) on its standard input, and report how it ended
    (``HookRan``). With ``pin_base``, a blocking hook runs as the gates then run: in a scratch
    copy of the work tree whose tests (``test_paths`` besides the built-in patterns) and the
    files its command names are as commit ``pin_base`` has them."""

    effect_id: EffectId
    hook: HookSpec
    input: Json
    sequence: LogPosition = field(validator=COUNT_VALIDATOR)
    pin_base: str | None = None
    test_paths: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class ScreenChanges:
    """Screen the change from ``base`` (None: the empty tree) to the work tree under the run's
    recorded policies, and report the hits. ``gates`` are the run's gates: the workspace files
    their commands run are protected."""

    effect_id: EffectId
    scope: ScreenScope
    base: str | None
    tamper: TamperPolicy | None
    postconditions: PostconditionPolicy | None
    gates: tuple[GateSpec, ...]


@final
@frozen(kw_only=True)
class SaveCheckpoint:
    """Store the state folded from the first ``sequence`` events."""

    effect_id: EffectId
    trigger: CheckpointTrigger
    sequence: LogPosition = field(validator=COUNT_VALIDATOR)


@final
@frozen(kw_only=True)
class CreateCommit:
    """Commit the workspace's changes with ``message`` (skip when nothing changed).

    ``may_exist``: this commit is asked for again right after a resume, so the process that
    died may have made it already; the handler must look for a commit carrying
    ``effect_id`` before making another. ``spent`` and ``models``: what the invocations since
    the last commit used, and their models (``""``: unknown), for the commit's ``Ralph-Cost``
    and ``Ralph-Model`` trailers.
    """

    effect_id: EffectId
    message: str
    may_exist: bool
    spent: SpendLine
    models: tuple[str, ...]


@final
@frozen(kw_only=True)
class Rebase:
    """Rebase the working branch onto ``onto``."""

    effect_id: EffectId
    onto: str


@final
@frozen(kw_only=True)
class AbortRebase:
    """Abort the conflicted rebase in progress."""

    effect_id: EffectId


@final
@frozen(kw_only=True)
class ValidateFinalState:
    """Run the final checks on the finished work."""

    effect_id: EffectId


@final
@frozen(kw_only=True)
class TriggerDevFix:
    """Report that ``failed_role``'s chain is exhausted and start dev-fix."""

    effect_id: EffectId
    failed_role: Role
    reason: str


@final
@frozen(kw_only=True)
class WriteCompletionMarker:
    """Write the completion marker with ``status`` and ``reason``."""

    effect_id: EffectId
    status: str
    reason: str


@final
@frozen(kw_only=True)
class WaitForHuman:
    """Wait for the answer to ``question_id`` until ``deadline``.

    With ``question_id`` None the question (``question``) has no id yet: the handler gives it
    one nobody can predict and reports ``HumanQuestionAsked`` instead of waiting.
    """

    effect_id: EffectId
    question_id: QuestionId | None
    deadline: Instant
    question: str = ""


@final
@frozen(kw_only=True)
class RestorePromptPermissions:
    """Give the user's prompt file at ``path`` its ``mode`` back (None: nothing was protected)."""

    effect_id: EffectId
    path: str | None
    mode: Count | None = field(validator=FILE_MODE_VALIDATOR)
    """The mode ``PromptFileProtected`` recorded (a count, like there: it fits the wire)."""


@final
@frozen(kw_only=True)
class CompleteRun:
    """Record that the run is complete, ended by ``reason``."""

    effect_id: EffectId
    reason: TerminationReason


@final
@frozen(kw_only=True)
class Terminate:
    """Stop: the run is terminal. ``reason`` decides the exit code."""

    effect_id: EffectId
    reason: TerminationReason


@final
@frozen(kw_only=True)
class RequireHuman:
    """Record that the run cannot go on without a person: ``reason`` and ``detail``."""

    effect_id: EffectId
    reason: str
    detail: str


Effect: TypeAlias = (
    StartRun
    | Begin
    | MaterializePrompt
    | InvokeAgent
    | CollectReport
    | RequireHuman
    | BackOff
    | WaitForLimitReset
    | SaveCheckpoint
    | RunHook
    | CreateCommit
    | Rebase
    | AbortRebase
    | RunGate
    | ScreenChanges
    | ValidateFinalState
    | TriggerDevFix
    | WriteCompletionMarker
    | WaitForHuman
    | RestorePromptPermissions
    | CompleteRun
    | Terminate
)
"""Everything orchestration can ask for: a closed union."""

EFFECT_TAGS: Final[Mapping[type, str]] = types.MappingProxyType(
    {
        member: "effect." + re.sub(r"(?<!^)(?=[A-Z])", "_", member.__name__).lower()
        for member in get_args(Effect)
    }
)
"""The stable ``type`` discriminator of each effect on the wire (and its span's name):
``effect.`` and the class's name in snake case (``WaitForLimitReset``:
``effect.wait_for_limit_reset``). A renamed effect changes its tag: the tags' snapshot
(``tests/serialization/test_roundtrip.py``) says so."""


_REDOABLE: Final[frozenset[type]] = frozenset(
    {
        Begin,
        SaveCheckpoint,
        # Writes the prompt file whole from the state before it, and the next effect (the
        # invocation, whose start is synced) reads it: redone, it writes the same bytes.
        MaterializePrompt,
    }
)


def is_redoable(effect: Effect) -> bool:
    """Whether ``effect``'s facts may be lost to a power cut without harm: its handler touches
    nothing outside the store (or only rewrites, whole, a file that nothing reads before the
    next synced commit: the prompt), so after the cut orchestration asks for it again from the
    state before it and the redo records the same facts (a fresh time aside).

    The durable loop commits these facts without flushing them to disk; they reach it with the
    next flushed commit, and every other effect's facts are flushed before the next effect runs.
    A process crash loses nothing either way: a commit is in the file once it returns.
    """
    return type(effect) in _REDOABLE


def started(effect: Begin, at: Instant) -> PipelineEvent:
    """The fact that records ``effect`` at ``at``: the one place that says which it is."""
    match effect.phase:
        case Phase.PLANNING:
            return PlanningStarted(at=at)
        case Phase.DEVELOPMENT if effect.hat is not None and effect.topic is not None:
            iteration = Ordinal(effect.iteration)
            return HatActivated(iteration=iteration, hat=effect.hat, topic=effect.topic, at=at)
        case Phase.DEVELOPMENT:
            return DevelopmentIterationStarted(iteration=Ordinal(effect.iteration), at=at)
        case Phase.REVIEW if effect.fixing:
            return FixAttemptStarted(review_pass=Ordinal(effect.review_pass), at=at)
        case Phase.REVIEW:
            return ReviewPassStarted(review_pass=Ordinal(effect.review_pass), at=at)
        case _:  # FINALIZING: the validator lets no other phase in
            return FinalizingStarted(at=at)


def measures_runtime(effect: Effect) -> bool:
    """Whether the runtime handler checks the runtime budget before ``effect`` (and reports
    it spent instead of carrying it out): a gate, or a task that begins, but not
    finalization, which must run for the run to end."""
    if isinstance(effect, Begin):
        return effect.phase is not Phase.FINALIZING
    return isinstance(effect, RunGate)
