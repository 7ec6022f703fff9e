"""Salvaging a damaged run: its good prefix copied to another store, with a fact saying so
(I/O through the event store port only).

The good prefix is every event the damaged store yields before its read stops on damage (a row
that does not decode, a missing sequence, more rows than the run's head, a broken chain): each
of those was read whole and in order, so the fold of the prefix is a state the run really
passed through. The prefix and one ``RunSalvaged`` fact go into the new store in one append,
so the new store holds the whole salvaged run or nothing of it. Checkpoints are not copied:
resuming folds the (short) log, and a checkpoint of the damaged store is not to be trusted.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Final, final

from attrs import frozen

from pipeline import PipelineError
from pipeline.core.state import PipelineState
from pipeline.events import Count, Instant, PipelineEvent, RunId, RunSalvaged
from pipeline.handlers.redaction import Redactor
from pipeline.handlers.store import EventLog, Folded, StoreCorruptError

__all__ = [
    "MAX_SALVAGE_REASON_CHARS",
    "NOTHING_DAMAGED",
    "NothingToSalvageError",
    "RunPresentError",
    "Salvaged",
    "good_prefix",
    "salvage",
]

MAX_SALVAGE_REASON_CHARS: Final = 500
"""The longest reason a ``RunSalvaged`` fact keeps (a damage message quotes the bad row)."""

NOTHING_DAMAGED: Final = "nothing was damaged: every event was copied"
"""The reason recorded when the whole run read without damage."""


class NothingToSalvageError(PipelineError, ValueError):
    """The run's first event is damaged: no state of the run can be rebuilt from the store."""


class RunPresentError(PipelineError, ValueError):
    """The target store holds the run already; nothing was written to it."""


@final
@frozen(kw_only=True)
class Salvaged:
    """What a salvage copied: the run, how many events were kept of how many the damaged
    store counted, what was wrong (None: nothing), the fact recorded and the resulting state."""

    run_id: RunId
    kept: int
    held: int
    """The events the damaged store's head counts for the run."""
    damage: str | None
    fact: RunSalvaged
    state: PipelineState
    """The fold of the salvaged log, ``RunSalvaged`` included."""


def good_prefix(store: EventLog, run_id: RunId) -> tuple[list[PipelineEvent], int, str | None]:
    """The run's events before the first damage, the head the store counts, and what the
    damage is (None: the whole log read fine). Damage is any :class:`StoreCorruptError` the
    read raises part-way (a :class:`~pipeline.handlers.store.DamagedEventError` among them),
    or fewer rows than the head counts (a lost tail); an event beyond the head is not kept,
    as the head moves with the rows it counts."""
    events: list[PipelineEvent] = []
    damage: str | None = None
    try:
        for event in store.read(run_id):
            events.append(event)
    except StoreCorruptError as error:
        damage = str(error)
    try:
        held = store.head(run_id)
    except StoreCorruptError as error:
        # The run's head row is damaged too: the rows read in order are all there is.
        held = len(events)
        damage = damage or str(error)
    if len(events) > held:
        del events[held:]
    elif len(events) < held and damage is None:
        # The log's tail is gone: the head moved with rows that are no longer there.
        damage = (
            f"run {run_id}: the event store is damaged: the run's head counts {held} events, "
            f"but only {len(events)} are stored (events {len(events)} to {held - 1} are "
            f"missing; the last good position is {len(events)} events)"
        )
    return events, held, damage


def salvage(
    source: EventLog,
    run_id: RunId,
    target: EventLog,
    *,
    source_label: str,
    clock: Callable[[], Instant],
    redactor: Redactor | None = None,
) -> Salvaged:
    """Copy the good prefix of ``run_id`` from ``source`` (only read) to ``target`` under the
    same id, then record ``RunSalvaged`` there (the time from ``clock``); one append.

    :class:`RunPresentError` when ``target`` holds the run already, and
    :class:`NothingToSalvageError` when not even the run's first event is good; nothing is
    written in either case.
    """
    events, held, damage = good_prefix(source, run_id)
    if not events:
        raise NothingToSalvageError(
            f"run {run_id} of {source_label} has nothing to salvage: its first event is "
            f"damaged ({damage or 'the run holds no events'})"
        )
    if target.head(run_id):
        raise RunPresentError(
            f"the store holds run {run_id} already; nothing was written (salvage into a new "
            "store, or move that one aside)"
        )
    # Masked like every fact a handler reports: a damage message quotes the stored row.
    redactor = Redactor.from_environment(os.environ) if redactor is None else redactor
    reason = redactor.text(damage or NOTHING_DAMAGED)
    if len(reason) > MAX_SALVAGE_REASON_CHARS:
        reason = reason[: MAX_SALVAGE_REASON_CHARS - 1] + "…"
    fact = RunSalvaged(
        source=redactor.text(source_label), kept=Count(len(events)), reason=reason, at=clock()
    )
    folded = Folded(PipelineState(), (*events, fact))
    target.append(run_id, 0, folded)
    return Salvaged(
        run_id=run_id, kept=len(events), held=held, damage=damage, fact=fact, state=folded.after
    )
