"""The event store port: an append-only log per run, with checkpoints (the contract all
adapters pass; see ``tests/handlers/store/contract.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol, final

from attrs import frozen

from pipeline import PipelineError, WireFormatError
from pipeline.core.serialization import EncodedCheckpoint
from pipeline.events import ContextNote, PipelineEvent, RunId
from pipeline.reducers.views import ResponseLogRow

__all__ = [
    "AnswerBox",
    "AnswerSource",
    "AnswerTakenError",
    "BookNote",
    "CheckpointCache",
    "ContextBook",
    "DamagedEventError",
    "EventLog",
    "EventStore",
    "Guidance",
    "GuidanceBox",
    "LeaseLostError",
    "ResponseLogStore",
    "RunStore",
    "RunSummary",
    "SequenceConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreMissingError",
    "StoreVanishedError",
    "StoredResponse",
    "UnknownRunError",
]


class StoreError(PipelineError, OSError):
    """The event store could not do what was asked (the message names the store and why)."""


class SequenceConflictError(StoreError):
    """An append expected the run's log to end at one sequence, and it ends at another.

    Another writer appended first; nothing of this append was written.
    """

    def __init__(self, run_id: str, expected: int, actual: int) -> None:
        super().__init__(
            f"run {run_id!r}: expected the log to hold {expected} events, it holds {actual}; "
            "another writer appended first and nothing was written"
        )
        self.run_id = run_id
        self.expected = expected
        self.actual = actual


class LeaseLostError(StoreError):
    """A worker appended to a run it no longer holds (its lease expired and another worker
    took the run over, or it was released); nothing was written."""


class AnswerTakenError(StoreError):
    """The question was answered already; the first answer stands and nothing was written."""


class StoreCorruptError(StoreError):
    """The store's file is damaged or not a store at all; it was left untouched."""


class DamagedEventError(StoreCorruptError, WireFormatError):
    """A stored event cannot be decoded: the store is damaged at that row (the message names
    the store, the run, the event and the last good position). A :class:`WireFormatError`
    too, as any undecodable event is."""


class StoreMissingError(StoreError, FileNotFoundError):
    """A reader was pointed at a store file that does not exist (nothing is created)."""


class StoreVanishedError(StoreError):
    """The store's file was deleted or replaced while this process had it open (an agent ran
    ``git clean -fdx``, or removed it): what was written since went to a file nobody can
    open again, and nothing more is written."""


class UnknownRunError(StoreError, LookupError):
    """The run asked for is not in the store (``known`` lists the runs it holds)."""

    def __init__(self, message: str, known: tuple[str, ...]) -> None:
        super().__init__(message)
        self.known = known


@final
@frozen(kw_only=True)
class StoredResponse:
    """A row of ``agent_response_log`` as stored: its id and run, and the projected row."""

    id: int
    run_id: RunId
    row: ResponseLogRow


@final
@frozen(kw_only=True)
class RunSummary:
    """A run in the store: its id, how many events it holds, and when it started."""

    run_id: RunId
    events: int
    started_at: str


class AnswerSource(Protocol):
    """Where a waiting run looks for people's answers (every event store is one)."""

    def answer(self, run_id: RunId, question_id: str) -> str | None:
        """The answer given to question ``question_id`` of run ``run_id`` (None: none yet)."""
        ...


class EventLog(Protocol):
    """An append-only event log per run: what a reader and an appender need."""

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        responses: Sequence[ResponseLogRow] = (),
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` atomically if the log holds exactly ``expected_sequence`` events,
        with the ``agent_response_log`` rows they project to, in the same transaction.

        With ``flush`` the events are on stable storage when this returns (as far as the
        store's durability setting asks); without it they are committed (every reader sees
        them, a crash of this process keeps them) and reach stable storage with the next
        flushed append, so a power cut can lose them, never anything before them. Returns the
        new number of events. Raises :class:`SequenceConflictError` (and writes nothing) when
        the log holds another number.
        """
        ...

    def read(self, run_id: RunId, from_sequence: int = 0) -> Iterator[PipelineEvent]:
        """The run's events from position ``from_sequence`` on, streamed in order."""
        ...

    def head(self, run_id: RunId) -> int:
        """How many events the run's log holds (0 for an unknown run)."""
        ...

    def runs(self) -> list[RunSummary]:
        """Every run in the store, oldest first."""
        ...


class CheckpointCache(Protocol):
    """Checkpoints of folded state: a cache of the fold, never the truth."""

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """Store ``checkpoint`` for the run (replacing one at the same sequence), unflushed:
        a checkpoint is a cache of the fold, and one lost to a power cut costs a longer
        replay, nothing more."""
        ...

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The run's stored checkpoints, newest first, unverified."""
        ...


class RunStore(EventLog, CheckpointCache, Protocol):
    """What the durable runner needs of a store: the log and its checkpoints. An embedding
    application with a store of its own implements this much to run pipelines on it."""


class ResponseLogStore(Protocol):
    """The ``agent_response_log`` projection, kept with the events it projects."""

    def response_log(self, run_id: RunId) -> list[StoredResponse]:
        """The run's ``agent_response_log`` rows, in order."""
        ...

    def rebuild_response_log(self) -> int:
        """Recreate ``agent_response_log`` from the events of every run (one transaction);
        returns the number of rows."""
        ...


class AnswerBox(AnswerSource, Protocol):
    """Where people's answers are kept until the waiting run records them."""

    def give_answer(self, run_id: RunId, question_id: str, text: str) -> None:
        """Keep ``text`` as the answer to question ``question_id`` of run ``run_id`` until the
        waiting run records it; :class:`AnswerTakenError` (nothing written) when the question
        holds an answer already."""
        ...


@final
@frozen(kw_only=True)
class Guidance:
    """A person's guidance to a run (``ralph guide``): its number in the run (from 1, in the
    order given), the hat it is for (None: whichever hat works next), its text and when it
    was given."""

    number: int
    hat: str | None
    text: str
    given_at: datetime


class GuidanceBox(Protocol):
    """Where people's guidance is kept until the run takes it in (every event store is one)."""

    def give_guidance(self, run_id: RunId, text: str, hat: str | None) -> int:
        """Keep ``text`` for run ``run_id``'s hat ``hat`` (None: whichever works next); its
        number."""
        ...

    def guidance_after(self, run_id: RunId, number: int) -> list[Guidance]:
        """The run's guidance numbered after ``number``, in order."""
        ...


@final
@frozen(kw_only=True)
class BookNote:
    """A note of the workspace's context book, with its number there."""

    number: int
    note: ContextNote


class ContextBook(Protocol):
    """The workspace's memories and tasks as numbered notes (every event store keeps one)."""

    def file_notes(self, notes: Sequence[ContextNote]) -> None:
        """Keep ``notes``, numbered in order after the last; a note whose uid the book has
        already is passed over, so filing again after a lost reply or a crash is safe."""
        ...

    def notes_after(self, number: int) -> list[BookNote]:
        """The notes numbered after ``number``, in order."""
        ...


class EventStore(RunStore, ResponseLogStore, AnswerBox, GuidanceBox, ContextBook, Protocol):
    """A whole event store: the log, its checkpoints, the response log, the answers, the
    guidance and the context book (what the SQLite, PostgreSQL and in-memory stores are)."""

    def close(self) -> None:
        """Release the store's resources."""
        ...
