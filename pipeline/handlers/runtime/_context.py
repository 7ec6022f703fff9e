"""What reaches a run from outside, taken in as facts before each prompt is made, so that the
prompt is made from a state that holds them (I/O: reads and writes the store, reads the clock):
people's guidance given with ``ralph guide`` that the run has not taken in yet, so that the
chosen hat's next prompt carries it; and the workspace's context book, where the run's agents'
notes are filed and whose new notes the run takes in."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.core.state import PipelineState
from pipeline.events import ContextNoted, GuidanceGiven, Instant, Ordinal, PipelineEvent
from pipeline.handlers.store import EventStore, Inbox, MessageKind, file_notes, notes_after

__all__ = ["context_facts", "file_unfiled", "guidance_facts", "outside_facts"]


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


def file_unfiled(book: Inbox, state: PipelineState) -> None:
    """File the notes the run's agents published that the book may not have yet (filing one
    the book has is a no-op, so this is safe to repeat after a crash)."""
    if state.context.unfiled:
        file_notes(book, state.context.unfiled)


def context_facts(
    book: Inbox, state: PipelineState, clock: Callable[[], Instant]
) -> tuple[ContextNoted, ...]:
    """The run's own notes filed, then ``ContextNoted`` for each note of the book numbered
    after the last one the run took in (none before the run has started)."""
    if state.run is None:
        return ()
    file_unfiled(book, state)
    # All of them: a prompt made from part of the book would show what it since undid.
    notes = notes_after(book, state.context.seen)
    if not notes:
        return ()
    now = clock()
    return tuple(ContextNoted(number=Ordinal(number), note=note, at=now) for number, note in notes)


def outside_facts(
    store: EventStore, state: PipelineState, clock: Callable[[], Instant]
) -> tuple[PipelineEvent, ...]:
    """What reached the run from outside since its last prompt: people's guidance, then the
    context book's new notes (its own agents' filed first)."""
    return (*guidance_facts(store, state, clock), *context_facts(store, state, clock))
