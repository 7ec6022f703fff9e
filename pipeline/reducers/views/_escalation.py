"""The hats' escalation ladders as a person reads them: where each hat stands and every move
it made, for ``ralph status`` and the report (pure, from folded states)."""

from __future__ import annotations

from typing import final

from attrs import frozen

from pipeline.core.state import Bounce, PipelineState, needed, rung_of
from pipeline.events import Instant

__all__ = ["LadderMove", "ladder_moves", "ladder_rows"]


_WORDS = {
    Bounce.REVIEW_ISSUES: "review found issues",
    Bounce.BLOCKED: "task blocked",
    Bounce.VALIDATION_FAILED: "validation failed",
}


@final
@frozen(kw_only=True)
class LadderMove:
    """Hat ``hat`` moved from model ``before`` to ``after`` (None: its own model) at ``at``,
    ``why``: the bounces that moved it up, or the success that moved it down."""

    hat: str
    before: str | None
    after: str | None
    why: str
    at: Instant
    invocations: int
    """The run's invocations before the move (the next one runs ``after``)."""


def ladder_moves(
    before: PipelineState, after: PipelineState, at: Instant, invocations: int
) -> tuple[LadderMove, ...]:
    """The moves one event made (none when the ladders did not change)."""
    if before.ladders is after.ladders or after.run is None:
        return ()
    moves = []
    for rung in after.ladders:
        ladder = after.run.loop.ladder(rung.hat)
        old = rung_of(before, rung.hat)
        if ladder is None or old.rung == rung.rung:
            continue
        why = (
            f"{_WORDS[rung.moved_by]} {needed(ladder, rung.moved_by)} times"
            if rung.rung > old.rung and rung.moved_by is not None
            else "its work held up (step_down)"
        )
        moves.append(
            LadderMove(
                hat=rung.hat,
                before=ladder.model(old.rung),
                after=ladder.model(rung.rung),
                why=why,
                at=at,
                invocations=invocations,
            )
        )
    return tuple(moves)


def ladder_rows(state: PipelineState) -> list[tuple[str, str]]:
    """An ``escalation`` row per hat with a ladder: its rung and model, its moves, and the
    bounces counted toward the next rung (none for a run without ladders)."""
    run = state.run
    if run is None:
        return []
    rows = []
    for ladder in run.loop.ladders:
        rung = rung_of(state, ladder.hat)
        model = ladder.model(rung.rung) or "its own model"
        counted = ", ".join(
            f"{bounce.value.replace('_', ' ')} {rung.count(bounce)}/{needed(ladder, bounce)}"
            for bounce in Bounce
            if needed(ladder, bounce)
        )
        rows.append(
            (
                f"escalation: {ladder.hat}",
                f"rung {rung.rung} of {len(ladder.models)} ({model}); "
                f"{rung.moves} moves; {counted}",
            )
        )
    return rows
