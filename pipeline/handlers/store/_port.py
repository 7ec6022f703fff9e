"""The event store port: an append-only log per run, its checkpoints, and one inbox of what
reaches runs from outside (the contract all adapters pass; see
``tests/handlers/store/contract.py``)."""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol, final

from attrs import frozen

from pipeline import PipelineError, WireFormatError
from pipeline.core.serialization import EncodedCheckpoint
from pipeline.events import PipelineEvent, RunId

__all__ = [
    "AnswerTakenError",
    "DamagedEventError",
    "EventLog",
    "EventStore",
    "Inbox",
    "LeaseLostError",
    "Letter",
    "Message",
    "MessageKind",
    "RunStore",
    "RunSummary",
    "SequenceConflictError",
    "StoreCorruptError",
    "StoreError",
    "StoreMissingError",
    "StoreVanishedError",
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
class RunSummary:
    """A run in the store: its id, how many events it holds, and when it started."""

    run_id: RunId
    events: int
    started_at: str


class MessageKind(enum.StrEnum):
    """What a message in the inbox is (its wire name is stored with it)."""

    ANSWER = "answer"
    """A person's answer to a run's question (``ralph respond``): addressed to the run, keyed
    by the question's id, so the first answer stands."""
    GUIDANCE = "guidance"
    """A person's guidance to a run (``ralph guide``): addressed to the run, its subject the
    hat it is for (None: whichever hat works next)."""
    NOTE = "note"
    """A note of the context book (a memory or a task): addressed to the workspace, keyed by
    the note's uid, its text the note as JSON."""


@final
@frozen(kw_only=True)
class Letter:
    """A message to post: its kind, whom it is for (a run, or None: the workspace), its text,
    the key that keeps it once (None: none), and its subject (a hat, for guidance)."""

    kind: MessageKind
    to: RunId | None
    text: str
    key: str | None = None
    subject: str | None = None


@final
@frozen(kw_only=True)
class Message:
    """A message kept in the inbox: a :class:`Letter` as posted, with its number (from 1 per
    addressee and kind, in the order posted) and when it was posted."""

    kind: MessageKind
    to: RunId | None
    number: int
    text: str
    key: str | None
    subject: str | None
    posted_at: datetime


class EventLog(Protocol):
    """An append-only event log per run: what a reader and an appender need."""

    def append(
        self,
        run_id: RunId,
        expected_sequence: int,
        events: Sequence[PipelineEvent],
        *,
        flush: bool = True,
    ) -> int:
        """Append ``events`` atomically if the log holds exactly ``expected_sequence`` events
        (with the rows the store's projections make of them, in the same transaction).

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


class RunStore(EventLog, Protocol):
    """What the durable runner needs of a store: the log and its checkpoints (a cache of the
    fold, never the truth). An embedding application with a store of its own implements this
    much to run pipelines on it."""

    def save_checkpoint(self, run_id: RunId, checkpoint: EncodedCheckpoint) -> None:
        """Store ``checkpoint`` for the run (replacing one at the same sequence), unflushed:
        a checkpoint is a cache of the fold, and one lost to a power cut costs a longer
        replay, nothing more."""
        ...

    def checkpoints(self, run_id: RunId) -> list[EncodedCheckpoint]:
        """The run's stored checkpoints, newest first, unverified."""
        ...


class Inbox(Protocol):
    """What reaches runs from outside, kept until they take it in: people's answers and
    guidance, and the workspace's context book, as messages of a kind (every event store
    keeps one)."""

    def post(self, letters: Sequence[Letter]) -> list[Message]:
        """Keep ``letters`` (one transaction), each numbered after the last message of its
        addressee and kind; the message kept for each. A letter whose key its addressee holds
        already for that kind is not kept again: the message kept earlier is returned for it,
        so posting again after a lost reply or a crash is safe."""
        ...

    def inbox(self, kind: MessageKind, to: RunId | None, after: int = 0) -> list[Message]:
        """The messages of ``kind`` for ``to`` (None: the workspace) numbered after
        ``after``, in order."""
        ...


class EventStore(RunStore, Inbox, Protocol):
    """A whole event store: the log, its checkpoints and the inbox (what the SQLite,
    PostgreSQL and in-memory stores are). Projections of the log (the agent response log)
    are registered with a store when it is made, never asked of it through this port."""

    def close(self) -> None:
        """Release the store's resources."""
        ...
