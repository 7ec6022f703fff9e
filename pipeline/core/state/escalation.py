"""Where each hat stands on its escalation ladder, and the model its next invocation runs
(pure). The reducer moves a hat up and down (``reducers/_escalation.py``); the orchestrator
reads :func:`escalated_model` when it invokes the hat's agent.
"""

from __future__ import annotations

from typing import assert_never

from pipeline.core.state.model import PipelineState
from pipeline.core.state.rungs import Bounce, Rung
from pipeline.events import Ladder, Role

__all__ = ["escalated_model", "ladder_hat", "ladder_of", "needed", "rung_of"]


def ladder_hat(state: PipelineState) -> str:
    """The hat whose work is under way: the topology hat at work, else the developer's."""
    return state.routing.hat or Role.DEVELOPER.value


def ladder_of(state: PipelineState, hat: str) -> Ladder | None:
    """``hat``'s ladder in the run's policy (None: it has none)."""
    run = state.run
    if run is None or not run.loop.ladders:
        return None
    return run.loop.ladder(hat)


def rung_of(state: PipelineState, hat: str) -> Rung:
    """Where ``hat`` stands (rung 0 with nothing counted before its first bounce)."""
    for rung in state.ladders:
        if rung.hat == hat:
            return rung
    return Rung(hat=hat)


def escalated_model(state: PipelineState, role: Role) -> str | None:
    """The model ``role``'s next invocation runs because of its hat's ladder (None: the hat's
    own model). Only the developer's work, in its own hat or a topology's, bounces."""
    if role is not Role.DEVELOPER:
        return None
    hat = ladder_hat(state)
    ladder = ladder_of(state, hat)
    if ladder is None:
        return None
    return ladder.model(rung_of(state, hat).rung)


def needed(ladder: Ladder, bounce: Bounce) -> int:
    """How many bounces of kind ``bounce`` move a hat up ``ladder``'s next rung (0: the kind
    does not count)."""
    match bounce:
        case Bounce.REVIEW_ISSUES:
            return ladder.review_issues
        case Bounce.BLOCKED:
            return ladder.blocked
        case Bounce.VALIDATION_FAILED:
            return ladder.validation_failed
        case _:
            assert_never(bounce)
