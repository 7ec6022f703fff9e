"""Moving hats along their escalation ladders (pure).

A bounce of the kind a ladder counts adds one to that kind; when the count reaches the
ladder's number for it, the hat moves up a rung and every count starts again (at the top
rung nothing more is counted). A success (a clean review; in a topology, the hat woken for
new work after work that did not bounce) clears the counts and, with ``step_down``, moves the
hat down a rung. A run without ladders pays one check per bounce.
"""

from __future__ import annotations

from typing import assert_never

from attrs import evolve

from pipeline.core.state import Bounce, PipelineState, Rung, ladder_hat, ladder_of, needed, rung_of
from pipeline.events import TASK_BLOCKED_TOPIC, TASK_RESUME_TOPIC, in_scope

__all__ = ["bounced", "hat_woken", "succeeded"]


def bounced(state: PipelineState, bounce: Bounce, hat: str | None = None) -> PipelineState:
    """``state`` after the work of ``hat`` (default: the hat at work) bounced as ``bounce``."""
    name = ladder_hat(state) if hat is None else hat
    ladder = ladder_of(state, name)
    if ladder is None:
        return state
    count = needed(ladder, bounce)
    if not count:
        return state
    rung = rung_of(state, name)
    if rung.rung >= len(ladder.models):
        # The top rung: nothing more to count toward.
        return state if rung.owed else _put(state, evolve(rung, owed=True))
    counted = rung.count(bounce) + 1
    if counted >= count:
        moved = Rung(hat=name, rung=rung.rung + 1, moves=rung.moves + 1, moved_by=bounce)
        return _put(state, evolve(moved, owed=True))
    match bounce:
        case Bounce.REVIEW_ISSUES:
            return _put(state, evolve(rung, review_issues=counted, owed=True))
        case Bounce.BLOCKED:
            return _put(state, evolve(rung, blocked=counted, owed=True))
        case Bounce.VALIDATION_FAILED:
            return _put(state, evolve(rung, validation_failed=counted, owed=True))
        case _:
            assert_never(bounce)


def succeeded(state: PipelineState, hat: str | None = None) -> PipelineState:
    """``state`` after the work of ``hat`` (default: the hat at work) held up."""
    name = ladder_hat(state) if hat is None else hat
    ladder = ladder_of(state, name)
    if ladder is None:
        return state
    rung = rung_of(state, name)
    if ladder.step_down and rung.rung > 0:
        return _put(state, Rung(hat=name, rung=rung.rung - 1, moves=rung.moves + 1))
    if rung.review_issues or rung.blocked or rung.validation_failed:
        return _put(state, Rung(hat=name, rung=rung.rung, moves=rung.moves, moved_by=rung.moved_by))
    return state


def hat_woken(state: PipelineState, hat: str, topic: str) -> PipelineState:
    """``state`` after topology hat ``hat`` was woken by ``topic``: one of its review topics
    is a review bounce; ralph's own wakes (``build.blocked`` after a gate, whose bounce was
    counted where it happened, and ``task.resume`` after a refused completion) are neither;
    any other topic is new work, so the work before it held up, unless that work bounced
    (``Rung.owed``) and was not sent back."""
    ladder = ladder_of(state, hat)
    if ladder is None:
        return state
    if topic in (TASK_BLOCKED_TOPIC, TASK_RESUME_TOPIC) or in_scope(ladder.review_topics, topic):
        # The hat is sent back to its work: this activation's work is judged afresh.
        if in_scope(ladder.review_topics, topic):
            state = bounced(state, Bounce.REVIEW_ISSUES, hat)
        return _settled(state, hat)
    if rung_of(state, hat).owed:
        # New work after work that bounced and never came back (a blocked task the planner
        # took over): no success.
        return _settled(state, hat)
    return succeeded(state, hat)


def _settled(state: PipelineState, hat: str) -> PipelineState:
    rung = rung_of(state, hat)
    return _put(state, evolve(rung, owed=False)) if rung.owed else state


def _put(state: PipelineState, rung: Rung) -> PipelineState:
    """``state`` with ``rung`` in place of its hat's (the ladders kept in hat order, so that
    two folds of one log build equal states)."""
    others = tuple(r for r in state.ladders if r.hat != rung.hat)
    return evolve(state, ladders=tuple(sorted((*others, rung), key=lambda r: r.hat)))
