"""The event store contract, written once: every adapter's test class inherits it.

An adapter's test module subclasses :class:`EventStoreContract` and provides ``make_store``
(a fixture giving a factory that opens a store; called twice, it opens two handles on the
same store, as two processes would).
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

from pipeline.errors import WireFormatError
from pipeline.events import (
    Instant,
    Json,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    RunId,
    TopicPublished,
)
from pipeline.handlers.store import AnswerTakenError, EventStore, SequenceConflictError
from pipeline.reducers import fold
from pipeline.serialization import checkpoint_state, encode_checkpoint
from pipeline.views import LoggedStatus, ResponseLogRow
from tests.support import scripted_run

StoreFactory = Callable[[], EventStore]
RUN = RunId("run-1")
T0 = datetime(2026, 5, 1, tzinfo=UTC)


def topics(count: int, start: int = 0) -> list[PipelineEvent]:
    """``count`` distinct small events."""
    return [
        TopicPublished(
            f"t.{i}",
            Json.of(f"payload {i}"),
            Ordinal(i + 1),
            None,
            Instant(T0 + timedelta(milliseconds=i)),
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
        assert store.answer(RUN, "q1") is None
        store.give_answer(RUN, "q1", "yes")
        assert other.answer(RUN, "q1") == "yes"
        assert other.answer(RunId("run-2"), "q1") is None
        assert other.answer(RUN, "q2") is None
        with pytest.raises(AnswerTakenError, match="answered already"):
            other.give_answer(RUN, "q1", "no")
        assert store.answer(RUN, "q1") == "yes"

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
        """The projection's rows go in the events' transaction: a conflicting append writes
        neither; a good one both, read back in order."""
        store = make_store()
        rows = [
            ResponseLogRow("developer:development:1:0", n, "{", s, ("why",), n - 1, T0.isoformat())
            for n, s in ((1, LoggedStatus.MALFORMED), (2, LoggedStatus.SUCCESS))
        ]
        store.append(RUN, 0, topics(1), rows[:1])
        with pytest.raises(SequenceConflictError):
            store.append(RUN, 0, topics(1, start=5), rows[1:])
        with pytest.raises(SequenceConflictError):
            store.append(RUN, 3, topics(1, start=6), rows[1:])
        store.append(RUN, 1, topics(1, start=9), rows[1:])
        stored = store.response_log(RUN)
        assert [s.row for s in stored] == rows
        assert {s.run_id for s in stored} == {RUN}
        assert store.response_log(RunId("other")) == []

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
        bad = OutputLineMalformed(Ordinal(9), "\ud800", "invalid JSON", Instant(T0))
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

    def test_reading_a_long_log_streams_in_constant_memory(self, make_store: StoreFactory) -> None:
        """100,000 events read one by one: peak memory stays far below holding them all."""
        store = make_store()
        for start in range(0, 100_000, 5_000):
            store.append(RUN, start, topics(5_000, start=start))
        tracemalloc.start()
        try:
            count = 0
            for _event in store.read(RUN):
                count += 1
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert count == 100_000
        # Holding 100,000 decoded events takes well over 40 MB; a stream needs a batch.
        assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"
