"""The workspace's context book and a run (I/O: reads and writes the store, reads the clock):
the run's agents' notes filed in the book, and the book's new notes taken into the run as
facts before each prompt, so that the prompt is made from a state that holds them."""

from __future__ import annotations

from collections.abc import Callable

from pipeline.core.state import PipelineState
from pipeline.events import ContextNoted, Instant, Ordinal, PipelineEvent
from pipeline.handlers.runtime._guidance import guidance_facts
from pipeline.handlers.store import EventStore, Inbox, file_notes, notes_after

__all__ = ["context_facts", "file_unfiled", "outside_facts"]


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
