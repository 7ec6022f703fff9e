"""The event store contract, written once: every adapter's test class inherits it.

An adapter's test module subclasses :class:`EventStoreContract` and provides ``make_store``
(a fixture giving a factory that opens a store, passing its keywords, such as
``projections``, to the store; called twice, it opens two handles on the same store, as two
processes would), ``make_table`` (a fixture that creates a table in the store's database,
for a projection of the test's own) and ``tamper`` (a :class:`Tamper` that changes the
store's rows behind its back, as damage or a person with the database's own client would).
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol, final

import pytest
from attrs import evolve

from pipeline import WireFormatError
from pipeline.core.serialization import checkpoint_state, encode_checkpoint
from pipeline.core.state import PipelineState
from pipeline.events import (
    ContextNote,
    Instant,
    Json,
    NoteKind,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    RunId,
    TopicPublished,
)
from pipeline.handlers.store import (
    RESPONSE_LOG,
    AnswerTakenError,
    DamagedEventError,
    EventStore,
    Folded,
    Letter,
    MessageKind,
    Projected,
    ResponseLog,
    SequenceConflictError,
    SqliteEventStore,
    answer_to,
    file_notes,
    give_answer,
    give_guidance,
    notes_after,
)
from pipeline.handlers.store._summaries import RUN_STATUS, RUN_SUMMARIES
from pipeline.reducers import fold
from pipeline.reducers.views import response_log
from tests.support import scripted_run


class TestedStore(EventStore, Projected, Protocol):
    """An event store with the projections it keeps (what every adapter is)."""


StoreFactory = Callable[..., TestedStore]
MakeTable = Callable[[str], None]


@final
class RunTally:
    """A projection of the test's own, as a run's summary would be: one row per run (its
    key), replaced at each append, holding how many events the run has and the last's type."""

    table: Final = "run_tally"
    columns: Final = ("run_id", "events", "last")
    key: Final = ("run_id",)
    order: Final = "run_id"
    TABLE_SQL: Final = (
        "CREATE TABLE run_tally (run_id TEXT PRIMARY KEY, events INTEGER NOT NULL, "
        "last TEXT NOT NULL)"
    )

    def rows(
        self, run_id: RunId, before: PipelineState, event: PipelineEvent, after: PipelineState
    ) -> Iterable[tuple[Any, ...]]:
        """The run's tally after ``event`` (one row, replacing the one before)."""
        return ((run_id, after.sequence, type(event).__name__),)

    def at_head(self, run_id: RunId, state: PipelineState) -> Iterable[tuple[Any, ...]]:
        """None: the tally is made of the events."""
        return ()


class Tamper(Protocol):
    """Changes a store's rows behind its back (the adapter's test module provides one)."""

    def sql(self, *statements: str) -> None:
        """Run ``statements`` (SQL both databases understand) in one transaction."""
        ...

    def edit_body(self, run_id: str, sequence: int, old: str, new: str) -> None:
        """Replace ``old`` with ``new`` in the stored body of one event."""
        ...


RUN = RunId("run-1")
T0 = datetime(2026, 5, 1, tzinfo=UTC)


def read_until_damage(store: EventStore, run_id: str = RUN) -> tuple[int, str]:
    """How many events a read of ``run_id`` yields before it fails as damage, and the
    message (the read must fail)."""
    read: list[PipelineEvent] = []
    with pytest.raises(DamagedEventError) as raised:
        read.extend(store.read(RunId(run_id)))
    return len(read), str(raised.value)


def topics(count: int, start: int = 0) -> list[PipelineEvent]:
    """``count`` distinct small events."""
    return [
        TopicPublished(
            topic=f"t.{i}",
            payload=Json.of(f"payload {i}"),
            line_number=Ordinal(i + 1),
            emitted_at=None,
            at=Instant(T0 + timedelta(milliseconds=i)),
        )
        for i in range(start, start + count)
    ]


def assert_read_stops_at_damaged_event_3(store: EventStore, label: str) -> None:
    """Reading :data:`RUN`, whose event 3 has ``topic`` 7, yields events 0-2, then fails
    naming the store (``label``), the run, the event and the bad field."""
    read: list[PipelineEvent] = []
    with pytest.raises(WireFormatError) as raised:
        read.extend(store.read(RUN))
    assert len(read) == 3  # events 0, 1 and 2
    message = str(raised.value)
    assert f"{label} run {RUN} event 3" in message
    assert "expected a string, got 7" in message
    assert ".topic" in message


class EventStoreContract:
    """What every event store does. Subclasses provide the ``make_store`` fixture."""

    def test_appended_events_read_back_in_order(self, make_store: StoreFactory) -> None:
        """Append two batches; reading gives every event, equal and in order."""
        store = make_store()
        batch = scripted_run().events
        assert store.append(RUN, 0, batch[:10]) == 10
        assert store.append(RUN, 10, batch[10:]) == len(batch)
        assert list(store.read(RUN)) == list(batch)
        assert store.head(RUN) == len(batch)

    def test_read_from_a_sequence_gives_the_tail(self, make_store: StoreFactory) -> None:
        """``read(run, k)`` starts at the event at position k."""
        store = make_store()
        events = topics(30)
        store.append(RUN, 0, events)
        assert list(store.read(RUN, 17)) == events[17:]
        assert list(store.read(RUN, 30)) == []

    def test_an_unknown_run_is_empty(self, make_store: StoreFactory) -> None:
        """A run never appended to has no events and head 0."""
        store = make_store()
        assert store.head(RunId("nobody")) == 0
        assert list(store.read(RunId("nobody"))) == []

    def test_an_answer_belongs_to_one_question_of_one_run(self, make_store: StoreFactory) -> None:
        """An answer is read back only for its own run and question (another handle sees it);
        a second answer to the same question is refused and the first stands."""
        store, other = make_store(), make_store()
        assert answer_to(store, RUN, "q1") is None
        give_answer(store, RUN, "q1", "yes")
        assert answer_to(other, RUN, "q1") == "yes"
        assert answer_to(other, RunId("run-2"), "q1") is None
        assert answer_to(other, RUN, "q2") is None
        with pytest.raises(AnswerTakenError, match="answered already"):
            give_answer(other, RUN, "q1", "no")
        assert answer_to(store, RUN, "q1") == "yes"

    def test_guidance_is_numbered_per_run_and_read_after_a_number(
        self, make_store: StoreFactory
    ) -> None:
        """A run's guidance is numbered 1, 2, ... in the order given (another run's starts
        at 1 too), read back by another handle after any number, text and hat intact."""
        store, other = make_store(), make_store()
        guidance = MessageKind.GUIDANCE
        assert store.inbox(guidance, RUN) == []
        assert give_guidance(store, RUN, "Prefer the standard library.", None) == 1
        assert give_guidance(other, RUN, "Keep the tests\nfast — ✓", "developer") == 2
        assert give_guidance(store, RunId("run-2"), "elsewhere", "builder") == 1
        given = other.inbox(guidance, RUN)
        assert [(g.number, g.subject, g.text) for g in given] == [
            (1, None, "Prefer the standard library."),
            (2, "developer", "Keep the tests\nfast — ✓"),
        ]
        assert given[0].posted_at.tzinfo is not None
        assert given[0].posted_at <= given[1].posted_at
        assert [g.number for g in store.inbox(guidance, RUN, 1)] == [2]
        assert store.inbox(guidance, RUN, 2) == []

    def test_two_people_guiding_at_once_get_two_numbers(self, make_store: StoreFactory) -> None:
        """Guidance given from eight threads, each with its own handle: every number once."""
        handles = [make_store() for _ in range(8)]
        with ThreadPoolExecutor(max_workers=8) as pool:
            numbers = list(
                pool.map(lambda i: give_guidance(handles[i], RUN, f"tip {i}", None), range(8))
            )
        assert sorted(numbers) == list(range(1, 9))
        texts = {g.number: g.text for g in handles[0].inbox(MessageKind.GUIDANCE, RUN)}
        assert texts == {n: f"tip {i}" for i, n in enumerate(numbers)}

    def test_the_context_book_numbers_notes_and_keeps_each_uid_once(
        self, make_store: StoreFactory
    ) -> None:
        """Notes are numbered 1, 2, ... in the order filed, read back by another handle after
        any number, intact; filing a uid again (a retry, a crash's redo) keeps it once."""
        store, other = make_store(), make_store()
        assert notes_after(store, 0) == []
        memory = ContextNote(
            uid="run-1:3",
            kind=NoteKind.MEMORY_ADDED,
            subject="m-1",
            text="Keep it \u0000 fast — ✓",
            tags=("dev",),
            by="dev",
            written_at=T0,
        )
        task = ContextNote(
            uid="person:ab",
            kind=NoteKind.TASK_ADDED,
            subject="t-1",
            text="Write it",
            tags=(),
            by="person",
            written_at=T0,
        )
        file_notes(store, [memory, task])
        file_notes(other, [task, memory])
        file_notes(store, [])
        assert notes_after(other, 0) == [(1, memory), (2, task)]
        done = ContextNote(
            uid="run-1:9",
            kind=NoteKind.TASK_DONE,
            subject="t-1",
            text="",
            tags=(),
            by="dev",
            written_at=T0,
        )
        file_notes(other, [done])
        assert [(n, note.uid) for n, note in notes_after(store, 2)] == [(3, "run-1:9")]
        assert notes_after(store, 3) == []

    def test_notes_filed_at_once_get_every_number_once(self, make_store: StoreFactory) -> None:
        """Eight handles file at once, each a note of its own and one they share: every note
        once, numbered 1 to 9 with no gap."""
        handles = [make_store() for _ in range(8)]
        shared = ContextNote(
            uid="shared",
            kind=NoteKind.MEMORY_ADDED,
            subject="m-0",
            text="same",
            tags=(),
            by="person",
            written_at=T0,
        )

        def file(i: int) -> None:
            own = ContextNote(
                uid=f"own-{i}",
                kind=NoteKind.TASK_ADDED,
                subject=f"t-{i}",
                text="x",
                tags=(),
                by="p",
                written_at=T0,
            )
            file_notes(handles[i], [shared, own])

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(file, range(8)))
        notes = notes_after(handles[0], 0)
        assert [n for n, _ in notes] == list(range(1, 10))
        assert sorted(note.uid for _, note in notes) == sorted(
            ["shared", *(f"own-{i}" for i in range(8))]
        )

    def test_the_inbox_numbers_per_addressee_and_kind_and_keeps_a_key_once(
        self, make_store: StoreFactory
    ) -> None:
        """One post keeps several letters: each numbered from 1 per addressee (a run, or the
        workspace) and kind; a letter whose key its addressee holds for that kind gives back
        the message kept earlier (with its number and text), and nothing more is kept."""
        store, other = make_store(), make_store()
        kept = store.post(
            [
                Letter(kind=MessageKind.GUIDANCE, to=RUN, text="a"),
                Letter(kind=MessageKind.ANSWER, to=RUN, text="b", key="q"),
                Letter(kind=MessageKind.GUIDANCE, to=RUN, text="c", subject="dev"),
                Letter(kind=MessageKind.GUIDANCE, to=None, text="d"),
            ]
        )
        assert [(m.kind, m.to, m.number) for m in kept] == [
            (MessageKind.GUIDANCE, RUN, 1),
            (MessageKind.ANSWER, RUN, 1),
            (MessageKind.GUIDANCE, RUN, 2),
            (MessageKind.GUIDANCE, None, 1),
        ]
        (again,) = other.post([Letter(kind=MessageKind.ANSWER, to=RUN, text="e", key="q")])
        assert (again.number, again.text, again.key) == (1, "b", "q")
        assert [m.text for m in other.inbox(MessageKind.ANSWER, RUN)] == ["b"]
        assert [m.text for m in other.inbox(MessageKind.GUIDANCE, None)] == ["d"]
        assert other.inbox(MessageKind.NOTE, None) == []

    def test_a_conflicting_append_fails_and_writes_nothing(self, make_store: StoreFactory) -> None:
        """Appending with a stale expected sequence raises and leaves the log as it was."""
        store = make_store()
        store.append(RUN, 0, topics(3))
        with pytest.raises(SequenceConflictError) as raised:
            store.append(RUN, 1, topics(2, start=100))
        assert raised.value.expected == 1
        assert raised.value.actual == 3
        assert "another writer appended first" in str(raised.value)
        assert list(store.read(RUN)) == topics(3)

    def test_response_rows_are_written_with_their_events_or_not_at_all(
        self, make_store: StoreFactory
    ) -> None:
        """The response log is projected in the events' transaction: a conflicting append
        writes no row; appended in batches, by two handles (the second loading the state
        before its batch from a checkpoint and the log), the rows equal the ones the whole log
        projects to, in order; a rebuild from the events gives them again."""
        store, other = make_store(), make_store()
        events = scripted_run().events
        expected = list(response_log(events))
        assert expected  # the scripted run takes a structured response
        taken = next(i for i, row in enumerate(events) if type(row).__name__ == "ResponseSubmitted")
        store.append(RUN, 0, events[:taken])
        with pytest.raises(SequenceConflictError):
            other.append(RUN, 1, events[taken:])
        assert ResponseLog.read(store, RUN) == []
        # Another handle wrote the head: ``other`` loads the state as a resume would, from
        # the checkpoint before it and the events after that.
        store.save_checkpoint(RUN, encode_checkpoint(fold(events[:3])))
        other.append(RUN, taken, events[taken:])
        assert ResponseLog.read(store, RUN) == expected
        assert ResponseLog.read(store, RunId("other")) == []
        written = store.rebuild_projections()
        if isinstance(store, SqliteEventStore):
            # It also keeps each run's summary (one row) and status (a row per part): rebuilt
            # too, the status whole (begun) and at the run's head.
            status = {row[1]: row[2] for row in store.projected(RUN_STATUS, RUN)}
            assert written == len(expected) + 1 + len(status)
            assert [row[:2] for row in store.projected(RUN_SUMMARIES, RUN)] == [(RUN, len(events))]
            assert "begun" in status
            assert status["state"] == len(events)
        else:
            assert written == len(expected)
        assert ResponseLog.read(other, RUN) == expected

    def test_a_registered_projection_is_written_in_the_append_and_replaced_by_key(
        self, make_store: StoreFactory, make_table: MakeTable
    ) -> None:
        """A store made with one more projection (a summary of each run, keyed by run) keeps
        its row in each append's transaction, replacing the row before; a conflicting append
        leaves it; a store made without it writes nothing there."""
        make_store().close()  # the database exists before its table is made
        make_table(RunTally.TABLE_SQL)
        tally = RunTally()
        store = make_store(projections=(RESPONSE_LOG, tally))
        store.append(RUN, 0, topics(2))
        store.append(RunId("run-2"), 0, topics(1))
        store.append(RUN, 2, topics(3, start=2))
        with pytest.raises(SequenceConflictError):
            store.append(RUN, 2, topics(1, start=9))
        assert store.projected(tally, RUN) == [(RUN, 5, "TopicPublished")]
        assert store.projected(tally, RunId("run-2")) == [("run-2", 1, "TopicPublished")]
        plain = make_store()
        plain.append(RunId("run-3"), 0, topics(1))
        assert store.projected(tally, RunId("run-3")) == []

    def test_folded_facts_are_projected_from_their_states_not_folded_again(
        self, make_store: StoreFactory, make_table: MakeTable
    ) -> None:
        """Facts appended :class:`Folded` from the log's head give the projections the states
        they carry (the engine's fold, not a second one: states stamped with another sequence
        show through); facts folded from another position are folded by the store."""
        make_store().close()
        make_table(RunTally.TABLE_SQL)
        tally = RunTally()
        store = make_store(projections=(tally,))
        folded = Folded(PipelineState(), topics(2))
        assert folded.after.sequence == 2
        folded.states = tuple(
            evolve(state, sequence=40 + state.sequence) for state in folded.states
        )
        assert store.append(RUN, 0, folded) == 2
        assert store.projected(tally, RUN) == [(RUN, 42, "TopicPublished")]
        stale = Folded(PipelineState(), topics(1, start=2))  # folded from 0, appended at 2
        stale.states = (evolve(stale.states[0], sequence=99),)
        store.append(RUN, 2, stale)
        assert store.projected(tally, RUN) == [(RUN, 3, "TopicPublished")]
        assert list(store.read(RUN)) == topics(3)

    def test_an_unflushed_append_is_committed_and_checked_like_any_other(
        self, make_store: StoreFactory
    ) -> None:
        """``flush=False`` changes only when the events reach the disk: another handle reads
        them at once, and the expected sequence is checked the same way."""
        store, other = make_store(), make_store()
        assert store.append(RUN, 0, topics(2), flush=False) == 2
        assert list(other.read(RUN)) == topics(2)
        with pytest.raises(SequenceConflictError):
            store.append(RUN, 0, topics(1, start=7), flush=False)
        assert store.append(RUN, 2, topics(3, start=2)) == 5
        assert list(other.read(RUN)) == topics(5)

    def test_a_batch_that_fails_to_encode_writes_nothing(self, make_store: StoreFactory) -> None:
        """A batch is atomic: one bad event (a lone surrogate) and none of it is stored."""
        store = make_store()
        store.append(RUN, 0, topics(2))
        bad = OutputLineMalformed(
            line_number=Ordinal(9), content="\ud800", error="invalid JSON", at=Instant(T0)
        )
        with pytest.raises(TypeError):
            store.append(RUN, 2, [*topics(3, start=2), bad])
        assert store.head(RUN) == 2
        assert list(store.read(RUN)) == topics(2)

    def test_concurrent_appenders_with_the_same_expectation_one_wins(
        self, make_store: StoreFactory
    ) -> None:
        """Eight writers expect sequence 0 at once: exactly one batch lands, whole."""
        make_store().append(RunId("warm-up"), 0, topics(1))
        stores = [make_store() for _ in range(8)]
        barrier = threading.Barrier(len(stores))
        outcomes: list[str] = []

        def write(index: int) -> None:
            barrier.wait()
            try:
                stores[index].append(RUN, 0, topics(5, start=index * 10))
                outcomes.append(f"won {index}")
            except SequenceConflictError:
                outcomes.append("conflict")

        threads = [threading.Thread(target=write, args=(i,)) for i in range(len(stores))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners = [o for o in outcomes if o.startswith("won")]
        assert len(winners) == 1
        assert outcomes.count("conflict") == len(stores) - 1
        winner = int(winners[0].split()[1])
        assert list(make_store().read(RUN)) == topics(5, start=winner * 10)

    def test_runs_are_listed_with_their_size(self, make_store: StoreFactory) -> None:
        """Every run appears once with its event count."""
        store = make_store()
        store.append(RunId("a"), 0, topics(2))
        store.append(RunId("b"), 0, topics(5))
        store.append(RunId("a"), 2, topics(1, start=2))
        assert {(r.run_id, r.events) for r in store.runs()} == {("a", 3), ("b", 5)}

    def test_runs_that_started_at_once_are_listed_in_the_order_their_logs_began(
        self, make_store: StoreFactory
    ) -> None:
        """A fork keeps its source's start: the later log is the later run, whatever the
        ids (the latest run is the one ``ralph resume`` goes on with when none is named)."""
        store = make_store()
        events = scripted_run().events[:3]
        store.append(RunId("zzz-source"), 0, events)
        store.append(RunId("aaa-fork"), 0, events)
        assert [r.run_id for r in store.runs()] == ["zzz-source", "aaa-fork"]

    def test_checkpoints_round_trip_newest_first(self, make_store: StoreFactory) -> None:
        """Saved checkpoints come back verified, newest first, and equal the fold they cover."""
        store = make_store()
        events = scripted_run().events
        store.append(RUN, 0, events)
        for cut in (5, 20, 12):
            store.save_checkpoint(RUN, encode_checkpoint(fold(events[:cut])))
        saved = store.checkpoints(RUN)
        assert [c.sequence for c in saved] == [20, 12, 5]
        assert checkpoint_state(saved[0], "latest") == fold(events[:20])

    def test_a_checkpoint_saved_again_at_its_sequence_replaces_the_first(
        self, make_store: StoreFactory
    ) -> None:
        """A checkpoint saved at a sequence that has one already replaces it: one is kept,
        the later (a resumed run saves the fold again where its last checkpoint stood)."""
        store = make_store()
        events = scripted_run().events
        store.append(RUN, 0, events)
        first = encode_checkpoint(fold(events[:5]))
        store.save_checkpoint(RUN, first)
        again = evolve(first, checksum="another", body=b"another body")
        store.save_checkpoint(RUN, again)
        assert store.checkpoints(RUN) == [again]

    def test_reading_a_long_log_streams_in_constant_memory(self, make_store: StoreFactory) -> None:
        """40,000 events read one by one: peak memory stays far below holding them all."""
        store = make_store(projections=())  # what is read is the point, not what is projected
        for start in range(0, 40_000, 5_000):
            store.append(RUN, start, topics(5_000, start=start))
        tracemalloc.start()
        try:
            count = 0
            for _event in store.read(RUN):
                count += 1
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert count == 40_000
        # Holding 40,000 decoded events takes about 14 MB; a stream needs a batch (about 1).
        assert peak < 4 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


class ChainContract:
    """The hash chain: any edited, missing, reordered, inserted or copied row, and a head or
    tip that does not name the last row, fails the read as damage naming the last good
    position; rows from before the chain still read. Subclasses provide ``make_store`` and
    ``tamper``."""

    def test_an_edited_body_that_still_decodes_is_damage(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """A payload changed in place: the rows before it are read, then the read fails."""
        store = make_store()
        store.append(RUN, 0, topics(5))
        tamper.edit_body(RUN, 2, "payload 2", "payload X")
        read, message = read_until_damage(store)
        assert read == 2
        assert "damaged at event 2" in message
        assert "does not match its digest" in message
        assert "last good position is 2" in message

    def test_two_events_swapped_are_damage(self, make_store: StoreFactory, tamper: Tamper) -> None:
        """Events 1 and 2 exchanged (each row intact, the order not)."""
        store = make_store()
        store.append(RUN, 0, topics(5))
        tamper.sql(
            "UPDATE events SET sequence = 1000 WHERE sequence = 1",
            "UPDATE events SET sequence = 1 WHERE sequence = 2",
            "UPDATE events SET sequence = 2 WHERE sequence = 1000",
        )
        read, message = read_until_damage(store)
        assert read == 1
        assert "damaged at event 1" in message

    def test_a_lost_tail_with_its_head_cut_is_damage(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """The last event removed and the head moved back with it: the tip still names it."""
        store = make_store()
        store.append(RUN, 0, topics(5))
        tamper.sql("DELETE FROM events WHERE sequence = 4", "UPDATE runs SET head = 4")
        read, message = read_until_damage(store)
        assert read == 4
        assert "replaced or lost" in message

    def test_a_head_beyond_the_rows_is_damage(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """A head one past the rows: the read names the count, not a conflict later."""
        store = make_store()
        store.append(RUN, 0, topics(5))
        tamper.sql("UPDATE runs SET head = head + 1")
        read, message = read_until_damage(store)
        assert read == 5
        assert "holds 5 events, but the run's head says 6" in message

    def test_a_run_copied_under_another_id_is_damage(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """Another run's rows, digests and all, inserted as a new run: each digest names the
        run it was written for."""
        store = make_store()
        store.append(RUN, 0, topics(3))
        tamper.sql(
            "INSERT INTO runs (run_id, started_at, head, tip) "
            "SELECT 'copy', started_at, head, tip FROM runs",
            "INSERT INTO events (run_id, sequence, type, schema_version, at, body, digest) "
            "SELECT 'copy', sequence, type, schema_version, at, body, digest FROM events",
        )
        assert len(list(store.read(RUN))) == 3
        read, message = read_until_damage(store, "copy")
        assert read == 0
        assert "damaged at event 0" in message

    def test_rows_from_before_the_chain_read_and_the_chain_starts_after_them(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """A run whose rows carry no digests (written before the migration) reads; events
        appended to it are chained from there, and a chained row whose digest is removed is
        damage."""
        store = make_store()
        store.append(RUN, 0, topics(3))
        tamper.sql("UPDATE events SET digest = NULL", "UPDATE runs SET tip = NULL")
        assert len(list(store.read(RUN))) == 3
        fresh = make_store()  # another process, without anything remembered of the run
        fresh.append(RUN, 3, topics(2, start=3))
        fresh.append(RUN, 5, topics(1, start=5))
        assert len(list(fresh.read(RUN))) == 6
        assert len(list(fresh.read(RUN, 4))) == 2
        tamper.edit_body(RUN, 4, "payload 4", "payload X")
        assert read_until_damage(fresh)[0] == 4
        tamper.edit_body(RUN, 4, "payload X", "payload 4")
        tamper.sql("UPDATE events SET digest = NULL WHERE sequence = 5")
        read, message = read_until_damage(fresh)
        assert read == 5
        assert "carries no digest" in message

    def test_a_read_from_a_later_position_sees_a_hole_before_it(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """A reader that starts from a checkpoint's position never reads the rows before it,
        yet a row missing there is named."""
        store = make_store()
        store.append(RUN, 0, topics(6))
        tamper.sql("DELETE FROM events WHERE sequence = 1")
        with pytest.raises(DamagedEventError, match="1 of the first 4 events are missing"):
            list(store.read(RUN, 4))

    def test_a_read_from_a_later_position_checks_the_chain_from_there(
        self, make_store: StoreFactory, tamper: Tamper
    ) -> None:
        """Edits after the starting position fail; the chain links to the row before it."""
        store = make_store()
        store.append(RUN, 0, topics(3))
        store.append(RUN, 3, topics(3, start=3))
        assert list(store.read(RUN, 3)) == topics(3, start=3)
        tamper.edit_body(RUN, 4, "payload 4", "payload X")
        with pytest.raises(DamagedEventError, match="damaged at event 4"):
            list(store.read(RUN, 3))

    def test_concurrent_writers_keep_one_chain(self, make_store: StoreFactory) -> None:
        """Two handles appending in turn (each had the other's append in between): the log
        reads whole, with its chain unbroken."""
        first, second = make_store(), make_store()
        head = 0
        for round_ in range(6):
            writer = first if round_ % 2 == 0 else second
            head = writer.append(RUN, head, topics(2, start=head))
        assert len(list(first.read(RUN))) == head == 12
        assert len(list(second.read(RUN, 7))) == 5
