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

from attrs import define, field

from pipeline.core.serialization import EncodedCheckpoint, decode_event, encode_event
from pipeline.events import ContextNote, PipelineEvent, RunId
from pipeline.handlers.store._port import (
    AnswerTakenError,
    BookNote,
    Guidance,
    RunSummary,
    SequenceConflictError,
    StoredResponse,
)
from pipeline.reducers.views import ResponseLogRow, response_log

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
    responses: list[StoredResponse] = field(factory=list)
    answers: dict[tuple[RunId, str], str] = field(factory=dict)
    guidance: dict[RunId, list[Guidance]] = field(factory=dict)
    book: list[ContextNote] = field(factory=list)
    lock: threading.RLock = field(factory=threading.RLock)
    """Held by every operation (reentrant: a rebuild reads the runs under it)."""


class MemoryEventStore:
    """An :class:`~pipeline.handlers.store.EventStore` kept in memory (``storage``: share
    another handle's data; a new, empty store when omitted)."""

    def __init__(self, storage: MemoryStorage | None = None) -> None:
        self.storage = MemoryStorage() if storage is None else storage
        self.label = "the in-memory store"

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        responses: Sequence[ResponseLogRow] = (),
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` (and their response rows) if the log holds ``expected_sequence``
        events; ``flush`` changes nothing here (memory is never synced)."""
        bodies = [encode_event(event) for event in events]  # all or nothing: encode first
        shared = self.storage
        with shared.lock:
            run = shared.runs.get(run_id)
            actual = 0 if run is None else len(run.bodies)
            if actual != expected_sequence:
                raise SequenceConflictError(run_id, expected_sequence, actual)
            if run is None:
                # Started when its first event says, as the SQL stores record it.
                started = events[0].at if events else datetime.now(UTC)
                run = shared.runs[run_id] = _Run(started_at=started.isoformat())
            run.bodies.extend(bodies)
            for row in responses:
                shared.responses.append(
                    StoredResponse(id=len(shared.responses) + 1, run_id=run_id, row=row)
                )
            return len(run.bodies)

    def response_log(self, run_id: RunId) -> list[StoredResponse]:
        """The run's response rows, in order."""
        with self.storage.lock:
            return [row for row in self.storage.responses if row.run_id == run_id]

    def rebuild_response_log(self) -> int:
        """Recreate the response rows from every run's events."""
        with self.storage.lock:  # one transaction: no append lands between read and swap
            rows = [(run, row) for run in self._run_ids() for row in response_log(self.read(run))]
            self.storage.responses = [
                StoredResponse(id=number, run_id=run, row=row)
                for number, (run, row) in enumerate(rows, 1)
            ]
        return len(rows)

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

    def give_answer(self, run_id: RunId, question_id: str, text: str) -> None:
        """Keep the answer to one question of one run; the first answer stands."""
        with self.storage.lock:
            if (run_id, question_id) in self.storage.answers:
                raise AnswerTakenError(
                    f"question {question_id} of run {run_id} was answered already"
                )
            self.storage.answers[(run_id, question_id)] = text

    def answer(self, run_id: RunId, question_id: str) -> str | None:
        """The answer given to one question of one run, if any."""
        with self.storage.lock:
            return self.storage.answers.get((run_id, question_id))

    def give_guidance(self, run_id: RunId, text: str, hat: str | None) -> int:
        """Keep a person's guidance for the run; its number."""
        with self.storage.lock:
            given = self.storage.guidance.setdefault(run_id, [])
            given.append(
                Guidance(number=len(given) + 1, hat=hat, text=text, given_at=datetime.now(UTC))
            )
            return len(given)

    def guidance_after(self, run_id: RunId, number: int) -> list[Guidance]:
        """The run's guidance numbered after ``number``, in order."""
        with self.storage.lock:
            return list(self.storage.guidance.get(run_id, [])[number:])

    def file_notes(self, notes: Sequence[ContextNote]) -> None:
        """Keep ``notes`` in the context book (a uid kept before is passed over)."""
        with self.storage.lock:
            book = self.storage.book
            kept = {note.uid for note in book}
            for note in notes:
                if note.uid not in kept:
                    book.append(note)
                    kept.add(note.uid)

    def notes_after(self, number: int) -> list[BookNote]:
        """The context book's notes numbered after ``number``, in order."""
        with self.storage.lock:
            book = self.storage.book
            return [BookNote(number=n, note=book[n - 1]) for n in range(number + 1, len(book) + 1)]

    def close(self) -> None:
        """Nothing to release: the data lives as long as its storage."""

    def _run_ids(self) -> list[RunId]:
        with self.storage.lock:
            return list(self.storage.runs)
