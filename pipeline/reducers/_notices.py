"""Notices owed to the next prompt, and the topics seen during a run (pure)."""

from __future__ import annotations

from attrs import evolve

from pipeline.state import MAX_NOTICES, Intake, Notice

__all__ = ["add_notice", "seen_with"]


def seen_with(seen: frozenset[str], topic: str) -> frozenset[str]:
    """``seen`` with ``topic`` in it (the same set when it already was)."""
    return seen if topic in seen else seen | {topic}


def add_notice(intake: Intake, notice: Notice) -> Intake:
    """``intake`` owing the next prompt ``notice`` too (the oldest dropped past the cap); the
    notice's topic counts as seen."""
    notices = (*intake.notices, notice)[-MAX_NOTICES:]
    return evolve(
        intake,
        notices=notices,
        notices_total=intake.notices_total + 1,
        seen_topics=seen_with(intake.seen_topics, notice.topic),
    )
