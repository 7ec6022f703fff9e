"""Context facts: the workspace's memories and tasks a run takes in (pure data).

A workspace keeps a *context book* in its store: numbered notes that add or remove a memory,
or add, start, finish or block a task. People write notes with ``ralph memory`` and
``ralph task``; a run files its agents' notes there (an agent's ``ralph memory add`` reaches its
run as the topic ``ralph.memory.add``, see :data:`~pipeline.events.CONTEXT_TOPICS`). Before
each prompt a run takes in the notes numbered after the last one it took, as
:class:`ContextNoted`, so its memories and tasks are a fold of its own log and a replay never
reads the book.
"""

from __future__ import annotations

from typing import TypeAlias, final

from attrs import field, frozen

from pipeline.events.notes import ContextNote
from pipeline.events.values import INSTANT_VALIDATOR, ORDINAL_VALIDATOR, Instant, Ordinal

__all__ = ["ContextEvent", "ContextNoted"]


@final
@frozen(kw_only=True)
class ContextNoted:
    """Note ``number`` of the workspace's context book was taken into the run."""

    number: Ordinal = field(validator=ORDINAL_VALIDATOR)
    note: ContextNote
    at: Instant = field(validator=INSTANT_VALIDATOR)


ContextEvent: TypeAlias = ContextNoted
"""The context category (one fact)."""
