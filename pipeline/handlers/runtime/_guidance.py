"""People's guidance taken into a run (I/O: reads the store and the clock): the guidance given
with ``ralph guide`` that the run has not taken in yet, as facts, asked for before each prompt
is made so that the chosen hat's next prompt carries it."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.core.state import PipelineState
from pipeline.events import GuidanceGiven, Instant, Ordinal
from pipeline.handlers.store import Inbox, MessageKind

__all__ = ["guidance_facts"]


def guidance_facts(
    box: Inbox, state: PipelineState, clock: Callable[[], Instant]
) -> tuple[GuidanceGiven, ...]:
    """``GuidanceGiven`` for each guidance the inbox ``box`` keeps for the run of ``state`` numbered
    after the last one it took in (none before the run has started)."""
    if state.run is None:
        return ()
    given = box.inbox(MessageKind.GUIDANCE, state.run.run_id, state.ledger.guidance_seen)
    if not given:
        return ()
    now = clock()
    return tuple(
        GuidanceGiven(
            number=Ordinal(g.number),
            hat=g.subject,
            text=g.text,
            given_at=Instant(g.posted_at),
            at=now,
        )
        for g in given
    )
