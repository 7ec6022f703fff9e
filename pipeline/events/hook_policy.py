"""A run's lifecycle hooks (pure data): ``[[hooks]]`` and ``[notify]`` in ``ralph.toml``,
recorded in ``RunStarted`` as ``LoopPolicy.hooks`` (the fact they make is ``HookRan``).

A hook is a command ralph runs at a point of the run, with what is going on as JSON on its
standard input; its exit status 0 passes. A failure does what ``on_error`` says: ``warn``
(recorded, the run goes on), ``block`` (the step does not happen) or ``suspend`` (the run
stops, resumably, before the step; ``ralph resume`` runs the hook again).
"""

from __future__ import annotations

import enum
from typing import Any, Final, final

from attrs import Attribute, field, frozen

from pipeline.events.values import COUNT_VALIDATOR, Count

__all__ = ["BLOCKABLE", "SUSPENDABLE", "HookAction", "HookPoint", "HookSpec"]


@enum.unique
class HookPoint(enum.StrEnum):
    """Where in a run a hook runs."""

    RUN_START = "run_start"
    """Once, before the run's first step."""
    BEFORE_INVOCATION = "before_invocation"
    """Before each agent invocation."""
    AFTER_INVOCATION = "after_invocation"
    """After each agent invocation, once its outcome is recorded."""
    BEFORE_COMMIT = "before_commit"
    """Before each commit ralph makes of the agents' work."""
    COMPLETION_CLAIMED = "completion_claimed"
    """Once an agent's completion promise was accepted, before it is validated."""
    ON_FAILURE = "on_failure"
    """After each agent invocation that failed or timed out."""
    RUN_END = "run_end"
    """Once, when the run has ended (completed or not; never when it was interrupted)."""
    QUESTION_ASKED = "question_asked"
    """Once per question, when the run starts waiting for a person's answer."""
    LIMIT_WAIT = "limit_wait"
    """Once per reset, when the run starts waiting for a provider's usage window."""


@enum.unique
class HookAction(enum.StrEnum):
    """What a failed hook does."""

    WARN = "warn"
    BLOCK = "block"
    SUSPEND = "suspend"


BLOCKABLE: Final = frozenset(
    {
        HookPoint.RUN_START,
        HookPoint.BEFORE_INVOCATION,
        HookPoint.BEFORE_COMMIT,
        HookPoint.COMPLETION_CLAIMED,
    }
)
"""The points with a step a hook can block: the run's start and each invocation (the run
stops), a commit (the work goes back to development), a completion (the claim is refused)."""

SUSPENDABLE: Final = frozenset(HookPoint) - {HookPoint.RUN_END}
"""The points a hook can suspend the run at (a run that ended has nothing to suspend)."""


def _argv(_instance: object, _attribute: Attribute[Any], value: tuple[str, ...]) -> None:
    if not value or not value[0].strip():
        raise ValueError("a hook's command must name a program")


@final
@frozen(kw_only=True)
class HookSpec:
    """A hook: ``name``, the ``point`` it runs at, its ``argv`` (run in the workspace, never in
    an agent's session), how long it may take, and what its failure does."""

    name: str
    point: HookPoint
    argv: tuple[str, ...] = field(validator=_argv)
    timeout_s: Count = field(validator=COUNT_VALIDATOR)
    on_error: HookAction = HookAction.WARN

    def __attrs_post_init__(self) -> None:
        if self.on_error is HookAction.BLOCK and self.point not in BLOCKABLE:
            raise ValueError(f"a {self.point.value} hook has no step to block: warn or suspend")
        if self.on_error is HookAction.SUSPEND and self.point not in SUSPENDABLE:
            raise ValueError(f"a {self.point.value} hook cannot suspend a run that ended")
