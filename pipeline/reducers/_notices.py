"""Notices owed to the next prompt, and the topics seen during a run (pure)."""

from __future__ import annotations

from typing import Any

from attrs import evolve

from pipeline.core.state import MAX_NOTICES, Intake, Notice
from pipeline.events import HUMAN_GUIDANCE_TOPIC

__all__ = ["add_notice", "seen_with"]


def seen_with(seen: frozenset[str], topic: str) -> frozenset[str]:
    """``seen`` with ``topic`` in it (the same set when it already was)."""
    return seen if topic in seen else seen | {topic}


def add_notice(intake: Intake, notice: Notice, **changes: Any) -> Intake:
    """``intake`` owing the next prompt ``notice`` too (past the cap the oldest of ralph's own
    notices is dropped: a person's guidance never is); the notice's topic counts as seen.
    ``changes`` are other fields of ``intake`` set in the same record (a counter the notice
    comes with), so that the event builds its intake once."""
    notices = (*intake.notices, notice)
    if len(notices) > MAX_NOTICES:
        notices = _capped(notices)
    return evolve(
        intake,
        notices=notices,
        notices_total=intake.notices_total + 1,
        seen_topics=seen_with(intake.seen_topics, notice.topic),
        **changes,
    )


def _capped(notices: tuple[Notice, ...]) -> tuple[Notice, ...]:
    """``notices`` with the oldest of ralph's own dropped until :data:`MAX_NOTICES` are left,
    or only a person's guidance is."""
    extra = len(notices) - MAX_NOTICES
    kept: list[Notice] = []
    for notice in notices:
        if extra > 0 and notice.topic != HUMAN_GUIDANCE_TOPIC:
            extra -= 1
            continue
        kept.append(notice)
    return tuple(kept)
