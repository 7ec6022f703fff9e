"""Which lifecycle hooks ran where (pure data, folded from ``HookRan``), and the occasion a
hook's run belongs to, which the orchestration and the reducer work out alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

from attrs import evolve, frozen

from pipeline.events.agent import InvocationStarted
from pipeline.events.hook_policy import HookPoint

if TYPE_CHECKING:
    from pipeline.core.state.model import PipelineState

__all__ = ["AFTER_POINTS", "ONCE_POINTS", "AfterInvocation", "Hooks", "hook_key"]

ONCE_POINTS: Final = frozenset(
    {
        HookPoint.RUN_START,
        HookPoint.RUN_END,
        HookPoint.QUESTION_ASKED,
        HookPoint.LIMIT_WAIT,
        HookPoint.COMPLETION_CLAIMED,
    }
)
"""The points whose hooks run once per occasion (the run, a question, a reset, a claim), even
across a resume; the others run before or after each step of their kind."""

AFTER_POINTS: Final = frozenset({HookPoint.AFTER_INVOCATION, HookPoint.ON_FAILURE})
"""The points whose hooks run once an invocation's facts are recorded."""


@final
@frozen(kw_only=True)
class AfterInvocation:
    """The last invocation of a run with hooks after invocations: its start (``started``, the
    ``at``-th fact), whether its own outcome was a failure, and the keys of its hooks that
    ran. Its hooks are due once its facts are in, until each has run, unless the run was
    resumed since (a stopped invocation's hooks are not run)."""

    started: InvocationStarted
    at: int
    failed: bool = False
    ran: tuple[str, ...] = ()


@final
@frozen(kw_only=True)
class Hooks:
    """``here``: the keys of the hooks that ran before the step at hand, which hold while the
    run's last fact is the last of them (``here_at``, the run's sequence after it: any other
    fact moves on); ``once``: the keys of the once-per-occasion hooks that ran; the counts of
    failures that warned and blocked, and the last failure; ``after``: the last invocation,
    whose hooks run after it."""

    here: tuple[str, ...] = ()
    here_at: int = -1
    once: tuple[str, ...] = ()
    warned: int = 0
    blocked: int = 0
    last_failure: str | None = None
    after: AfterInvocation | None = None

    def ran(self, key: str, sequence: int) -> bool:
        """Whether the hook run ``key`` names has run, in a state of ``sequence`` facts."""
        return key in self.once or (sequence == self.here_at and key in self.here)

    def with_here(self, key: str, sequence: int) -> Hooks:
        """These hooks with ``key`` run before the step at hand (``sequence``: the run's
        facts before it)."""
        here = (*self.here, key) if sequence == self.here_at else (key,)
        return evolve(self, here=here, here_at=sequence + 1)


def _occasion(state: PipelineState, point: HookPoint) -> str:
    """What one run of ``point``'s hooks is for."""
    if point is HookPoint.QUESTION_ASKED:
        question = state.ledger.pending_question
        return f"{point.value}:{'-' if question is None else question.question_id}"
    if point is HookPoint.LIMIT_WAIT:
        until = state.agent.limit_until
        return f"{point.value}:{'-' if until is None else until.isoformat()}"
    if point is HookPoint.COMPLETION_CLAIMED:
        progress = state.progress
        return f"{point.value}:{progress.iteration}.{progress.review_pass}"
    return point.value


def hook_key(state: PipelineState, point: HookPoint, name: str) -> str:
    """The key of hook ``name``'s run at ``point`` in ``state``."""
    return f"{_occasion(state, point)}:{name}"
