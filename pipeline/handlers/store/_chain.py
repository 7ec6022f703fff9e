"""The hash chain that makes a run's log tamper-evident (I/O-free, shared by both stores).

Each stored event carries a digest: SHA-256 over the previous event's digest and what replay
reads of this row (run id, sequence, type, schema version, body), so an edited, missing,
reordered or inserted row, or a row copied from another run, no longer matches. The run's
row keeps the digest of its last event (its ``tip``) and moves it with the head in the same
transaction, so rows lost or replaced at the end show too.

Rows written before the chain existed carry no digest, and a run that holds only such rows
has no tip: its chain starts at the first event appended after the migration, and a row
without a digest after a chained one is damage. The chain detects damage and edits made
without recomputing it; it is not a signature (whoever can write the store can rewrite the
whole chain).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipeline.events import SCHEMA_VERSION, RunId
from pipeline.handlers.store._link import link
from pipeline.handlers.store._port import DamagedEventError

__all__ = ["ChainCheck", "chain_start", "chained"]


def chained(
    run_id: RunId, expected: int, bodies: Sequence[tuple[str, Any, bytes | str]], tip: str | None
) -> list[tuple[Any, ...]]:
    """The rows of ``bodies`` (type, time, body) appended after an event whose digest is
    ``tip``: ``(run_id, sequence, type, schema_version, at, body, digest)``."""
    rows = []
    for offset, (tag, at, body) in enumerate(bodies):
        sequence = expected + offset
        tip = link(tip, run_id, sequence, tag, SCHEMA_VERSION, body)
        rows.append((run_id, sequence, tag, SCHEMA_VERSION, at, body, tip))
    return rows


class ChainCheck:
    """Checks the rows of one run, read in order, against their digests.

    ``previous`` is the digest of the event before the first row fed (None when reading from
    the start, or when that event predates the chain). Raises :class:`DamagedEventError`
    naming ``log`` and the last good position at the first row that does not match.
    """

    __slots__ = ("_chained", "_log", "_run_id", "previous")

    def __init__(self, log: str, run_id: str, previous: str | None) -> None:
        self._log = log
        self._run_id = run_id
        self.previous = previous
        """The digest of the last row fed (or the one before the first)."""
        self._chained = previous is not None

    def feed(
        self, sequence: int, tag: str, version: int, body: bytes | str, digest: str | None
    ) -> None:
        """Check the row stored as event ``sequence`` (a body stored as text is hashed as
        its UTF-8 bytes, as the PostgreSQL store keeps it)."""
        if digest is None:
            if self._chained:
                raise self._damage(sequence, "it carries no digest, though the events before it do")
            return
        if digest != link(self.previous, self._run_id, sequence, tag, version, body):
            raise self._damage(
                sequence,
                "it does not match its digest: the event, or the order of the events before "
                "it, was changed after it was written",
            )
        self.previous = digest
        self._chained = True

    def finish(self, position: int, head: int, tip: str | None) -> None:
        """Check, after the last row (``position`` rows read in all), that the run's head and
        tip name that row: fewer rows than the head, or a last row other than the one the
        head's transaction recorded, is damage."""
        if position != head:
            raise DamagedEventError(
                f"{self._log}: the event store is damaged: it holds {position} events, but the "
                f"run's head says {head} (the last good position is {min(position, head)} "
                "events; the store was left untouched: restore it from a backup, or salvage "
                "the good events with ralph salvage)"
            )
        if tip != self.previous:
            raise DamagedEventError(
                f"{self._log}: the event store is damaged: its last event is not the one the "
                f"run recorded last (events at its end were replaced or lost; the last good "
                f"position is at most {position} events; the store was left untouched)"
            )

    def _damage(self, sequence: int, what: str) -> DamagedEventError:
        return DamagedEventError(
            f"{self._log}: the event store is damaged at event {sequence}: {what} (the last "
            f"good position is {sequence} events; the store was left untouched: restore it "
            "from a backup, or salvage the good events with ralph salvage)"
        )


def chain_start(log: str, from_sequence: int, count: int, digest: str | None) -> str | None:
    """Where a read from ``from_sequence`` links to the chain: the digest of the event before
    it (``digest``, None before the chain began), once ``count``, the rows stored before it,
    shows none is missing (the reader never reads them)."""
    if count != from_sequence:
        raise DamagedEventError(
            f"{log}: the event store is damaged: {from_sequence - count} of the first "
            f"{from_sequence} events are missing (run ralph replay --verify to find the "
            "last good position; the store was left untouched)"
        )
    return digest
