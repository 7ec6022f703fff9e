"""An event store in this process's memory: the same contract as the SQL stores, no file.

For simulations, tests and embedding where nothing must outlive the process. Events are kept
encoded, as the SQL stores keep them, so a run through it crosses the wire format exactly as a
stored run does (a batch that does not encode is refused whole), and reading decodes one event
at a time. Several handles may share one :class:`MemoryStorage`, as several connections share
a database; a lock makes each append atomic.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from attrs import define, field

from pipeline.core.serialization import EncodedCheckpoint, decode_event, encode_event
from pipeline.events import PipelineEvent, RunId
from pipeline.handlers.store._port import (
    Letter,
    Message,
    MessageKind,
    RunSummary,
    SequenceConflictError,
)
from pipeline.handlers.store._projection import (
    DEFAULT_PROJECTIONS,
    Projection,
    project,
    rebuilt,
)

__all__ = ["MemoryEventStore", "MemoryStorage"]


@define(kw_only=True)
class _Run:
    """One run's log (encoded events) and its checkpoints."""

    started_at: str
    bodies: list[bytes] = field(factory=list)
    checkpoints: dict[int, EncodedCheckpoint] = field(factory=dict)


@define(kw_only=True)
class MemoryStorage:
    """What the handles of one in-memory store share."""

    runs: dict[RunId, _Run] = field(factory=dict)
    tables: dict[str, list[tuple[Any, ...]]] = field(factory=dict)
    """The projections' rows, by table, in the order written."""
    inbox: dict[tuple[str, MessageKind], list[Message]] = field(factory=dict)
    """The messages by addressee (a run id, or "" for the workspace) and kind, in order."""
    lock: threading.RLock = field(factory=threading.RLock)
    """Held by every operation (reentrant: a rebuild reads the runs under it)."""


class MemoryEventStore:
    """An :class:`~pipeline.handlers.store.EventStore` kept in memory (``storage``: share
    another handle's data; a new, empty store when omitted), keeping ``projections``."""

    def __init__(
        self,
        storage: MemoryStorage | None = None,
        *,
        projections: Sequence[Projection] = DEFAULT_PROJECTIONS,
    ) -> None:
        self.storage = MemoryStorage() if storage is None else storage
        self.label = "the in-memory store"
        self._projections = tuple(projections)

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` (and their projections' rows) if the log holds
        ``expected_sequence`` events; ``flush`` changes nothing here (memory is never
        synced)."""
        bodies = [encode_event(event) for event in events]  # all or nothing: encode first
        shared = self.storage
        with shared.lock:
            run = shared.runs.get(run_id)
            actual = 0 if run is None else len(run.bodies)
            if actual != expected_sequence:
                raise SequenceConflictError(run_id, expected_sequence, actual)
            tables = project(self._projections, run_id, expected_sequence, events, self)
            if run is None:
                # Started when its first event says, as the SQL stores record it.
                started = events[0].at if events else datetime.now(UTC)
                run = shared.runs[run_id] = _Run(started_at=started.isoformat())
            run.bodies.extend(bodies)
            for projection in self._projections:
                self._write(projection, tables[projection.table])
            return len(run.bodies)

    def _write(self, projection: Projection, rows: list[tuple[Any, ...]]) -> None:
        """Add ``rows`` to the projection's table, each replacing the row with its key."""
        table = self.storage.tables.setdefault(projection.table, [])
        if not projection.key:
            table.extend(rows)
            return
        at = [projection.columns.index(column) for column in projection.key]
        for row in rows:
            key = [row[i] for i in at]
            table[:] = [kept for kept in table if [kept[i] for i in at] != key]
            table.append(row)

    def projected(self, projection: Projection, run_id: RunId) -> list[tuple[Any, ...]]:
        """The run's rows of ``projection``, in the order written."""
        with self.storage.lock:
            rows = self.storage.tables.get(projection.table, [])
            return [row for row in rows if row[0] == run_id]

    def rebuild_projections(self) -> int:
        """Recreate every projection's rows from every run's events."""
        count = 0
        with self.storage.lock:  # one transaction: no append lands between read and swap
            for projection in self._projections:
                self.storage.tables[projection.table] = []
            for run_id in list(self.storage.runs):
                tables = rebuilt(self._projections, run_id, self)
                for projection in self._projections:
                    rows = tables[projection.table]
                    self._write(projection, rows)
                    count += len(rows)
        return count

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        """The run's events from ``from_sequence`` on, decoded one at a time."""
        with self.storage.lock:
            run = self.storage.runs.get(run_id)
            bodies = [] if run is None else run.bodies[from_sequence:]
        for body in bodies:
            yield decode_event(body)

    def head(self, run_id: RunId) -> int:
        """How many events the run's log holds."""
        with self.storage.lock:
            run = self.storage.runs.get(run_id)
            return 0 if run is None else len(run.bodies)

    def runs(self) -> list[RunSummary]:
        """Every run, oldest first."""
        with self.storage.lock:
            listed = [
                RunSummary(run_id=run_id, events=len(run.bodies), started_at=run.started_at)
                for run_id, run in self.storage.runs.items()
            ]
        # A stable sort keeps runs that started at once in the order their logs began.
        return sorted(listed, key=lambda summary: summary.started_at)

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """Keep ``checkpoint`` (replacing one at the same sequence)."""
        with self.storage.lock:
            run = self.storage.runs.get(run_id)
            if run is not None:
                run.checkpoints[checkpoint.sequence] = checkpoint

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The run's checkpoints, newest first."""
        with self.storage.lock:
            run = self.storage.runs.get(run_id)
            kept = [] if run is None else list(run.checkpoints.values())
        return sorted(kept, key=lambda checkpoint: checkpoint.sequence, reverse=True)

    def post(self, letters: Sequence[Letter]) -> list[Message]:
        """Keep ``letters``, each numbered after its addressee's last of its kind (a key
        kept before gives the message kept then)."""
        kept = []
        with self.storage.lock:
            now = datetime.now(UTC)
            for letter in letters:
                box = self.storage.inbox.setdefault((letter.to or "", letter.kind), [])
                earlier = [m for m in box if letter.key is not None and m.key == letter.key]
                if earlier:
                    kept.append(earlier[0])
                    continue
                message = Message(
                    kind=letter.kind,
                    to=letter.to,
                    number=len(box) + 1,
                    text=letter.text,
                    key=letter.key,
                    subject=letter.subject,
                    posted_at=now,
                )
                box.append(message)
                kept.append(message)
        return kept

    def inbox(self, kind: MessageKind, to: RunId | None, after: int = 0) -> list[Message]:
        """The messages of ``kind`` for ``to`` numbered after ``after``, in order."""
        with self.storage.lock:
            return list(self.storage.inbox.get((to or "", kind), [])[after:])

    def close(self) -> None:
        """Nothing to release: the data lives as long as its storage."""
