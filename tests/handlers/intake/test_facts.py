"""From an events file on disk to facts in the log, and the reducer's decisions on them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.core.state import Phase, PipelineState, TerminationReason
from pipeline.events import (
    MALFORMED_TOPIC,
    AgentName,
    Budget,
    Count,
    Digest,
    DurationMs,
    EventsFileRead,
    EventsFileTruncated,
    Instant,
    Json,
    LoopPolicy,
    Ordinal,
    OutputLineMalformed,
    PipelineEvent,
    Role,
    RoleChain,
    RunId,
    RunStarted,
    TopicPublished,
)
from pipeline.handlers.intake import emit, read_agent_events
from pipeline.reducers import fold, reduce

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def _clock() -> Instant:
    return Instant(T0)


def _started(max_malformed: int = 3) -> PipelineState:
    budget = Budget(
        max_iterations=Ordinal(3),
        max_review_passes=Count(1),
        max_retries_per_agent=Count(1),
        backoff_base_ms=DurationMs(0),
        backoff_cap_ms=DurationMs(0),
        max_consecutive_failures=Ordinal(2),
        max_consecutive_malformed=Ordinal(max_malformed),
    )
    chains = tuple(RoleChain(role=role, agents=(AgentName("a"),)) for role in Role)
    started = RunStarted(
        run_id=RunId("r"),
        config_digest=Digest("c"),
        prompt_digest=Digest("p"),
        budget=budget,
        chains=chains,
        rebase_onto=None,
        loop=LoopPolicy.off(),
        at=Instant(T0),
    )
    return reduce(PipelineState(), started)


def _append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def _read_on(path: Path, state: PipelineState) -> tuple[PipelineEvent, ...]:
    """What the runtime reads after an invocation: from where the log says reading stopped."""
    return read_agent_events(path, state.intake.events_offset, state.intake.events_lines, _clock)


def test_valid_invalid_valid_lines_become_two_topics_one_malformed_line_and_the_position(
    tmp_path: Path,
) -> None:
    """Facts come in file order; a structured payload stays structured; ts is kept in UTC."""
    path = tmp_path / "events.jsonl"
    emit(path, "build.start", '{"files": ["a.py"], "n": 2}', as_json=True)
    _append(path, b"this is not json\n")
    _append(path, b'{"topic": "build.done", "ts": "2026-11-01T10:00:00+02:00"}\n')
    facts = read_agent_events(path, 0, 0, _clock)
    assert [type(f) for f in facts] == [
        TopicPublished,
        OutputLineMalformed,
        TopicPublished,
        EventsFileRead,
    ]
    first, bad, last, position = facts
    assert isinstance(first, TopicPublished)
    assert (first.topic, first.line_number) == ("build.start", 1)
    assert first.payload.value == {"files": ["a.py"], "n": 2}
    assert first.emitted_at is not None
    assert isinstance(bad, OutputLineMalformed)
    assert (bad.line_number, bad.content) == (2, "this is not json")
    assert bad.error.startswith("invalid JSON")
    assert isinstance(last, TopicPublished)
    assert (last.line_number, last.payload, last.at) == (3, Json.of(None), T0)
    assert last.emitted_at == datetime(2026, 11, 1, 8, tzinfo=UTC)
    assert last.emitted_at.tzinfo is UTC
    assert position == EventsFileRead(
        offset=Count(path.stat().st_size), lines=Count(3), at=Instant(T0)
    )


def test_each_read_goes_on_from_the_recorded_position_and_waits_for_partial_lines(
    tmp_path: Path,
) -> None:
    """Line numbers continue across reads; a line without its newline is read once complete;
    nothing new means no facts at all."""
    path = tmp_path / "events.jsonl"
    state = _started()
    assert _read_on(path, state) == ()  # no file yet
    emit(path, "a", "1")
    _append(path, b'\n{"topic": "b", "pay')  # a blank line 2, and line 3 half written
    first = _read_on(path, state)
    state = fold(first, state)
    assert [f.line_number for f in first if isinstance(f, TopicPublished)] == [1]
    assert (state.intake.events_lines, state.intake.events_offset) == (2, path.stat().st_size - 19)
    assert _read_on(path, state) == ()
    _append(path, b'load": [1]}\n')
    second = _read_on(path, state)
    state = fold(second, state)
    assert [(f.topic, f.line_number) for f in second if isinstance(f, TopicPublished)] == [("b", 3)]
    assert (state.intake.events_lines, state.intake.events_offset) == (3, path.stat().st_size)
    assert state.intake.topics_published == 2


def test_the_malformed_counter_counts_across_reads_and_a_valid_line_resets_it(
    tmp_path: Path,
) -> None:
    """Two reads of malformed lines only: the counter is 2; a valid line sets it back to 0.
    Each malformed line is owed to the next prompt and shows as event.malformed."""
    path = tmp_path / "events.jsonl"
    state = _started(max_malformed=3)
    _append(path, b"{oops\n")
    state = fold(_read_on(path, state), state)
    assert state.intake.consecutive_malformed == 1
    _append(path, b'{"topic": 42}\n')
    state = fold(_read_on(path, state), state)
    assert state.intake.consecutive_malformed == 2
    first, second = state.intake.feedback
    assert (first.line_number, first.excerpt) == (1, "{oops")
    assert first.error.startswith("invalid JSON")
    assert (second.line_number, second.error) == (2, "topic is not a string (int)")
    assert MALFORMED_TOPIC in state.intake.seen_topics
    emit(path, "ok", "fine")
    state = fold(_read_on(path, state), state)
    assert state.intake.consecutive_malformed == 0
    assert state.intake.malformed_lines == 2
    assert state.phase is Phase.PLANNING


def test_the_limit_of_malformed_lines_in_a_row_ends_the_run(tmp_path: Path) -> None:
    """Three malformed lines with no valid line between: finalization with
    validation_failure, and the read position is still recorded afterwards."""
    path = tmp_path / "events.jsonl"
    _append(path, b"garbage 1\ngarbage 2\n\ngarbage 3\n")
    facts = read_agent_events(path, 0, 0, _clock)
    state = fold(facts, _started(max_malformed=3))
    assert state.phase is Phase.FINALIZING
    assert state.termination is TerminationReason.VALIDATION_FAILURE
    assert state.intake.events_lines == 4
    assert state.ledger.anomalies == 0


def test_feedback_keeps_the_last_lines_and_counts_the_rest(tmp_path: Path) -> None:
    """Twelve malformed lines (limit high): the prompt is owed the last ten, cut to 100
    characters, and told of two more."""
    path = tmp_path / "events.jsonl"
    _append(path, b"".join(b"x" * 150 + b" %d\n" % i for i in range(12)))
    state = fold(read_agent_events(path, 0, 0, _clock), _started(max_malformed=50))
    feedback = state.intake.feedback
    assert [n.line_number for n in feedback] == list(range(3, 13))
    assert all(len(n.excerpt) == 100 for n in feedback)
    assert state.intake.feedback_omitted == 2


def test_a_truncated_events_file_is_read_again_from_its_start(tmp_path: Path) -> None:
    """An agent rewrote the file with ``>``: the fact says so, the new file is read from its
    start with line numbers going on, and the run goes on (before: a workspace error that
    every resume met again)."""
    path = tmp_path / "events.jsonl"
    emit(path, "a", "1")
    emit(path, "b", "2")
    state = fold(_read_on(path, _started()), _started())
    size = path.stat().st_size
    path.write_bytes(b'{"topic": "c"}\n')
    facts = _read_on(path, state)
    assert [type(f) for f in facts] == [EventsFileTruncated, TopicPublished, EventsFileRead]
    truncated, topic, position = facts
    assert truncated == EventsFileTruncated(offset=Count(size), size=Count(15), at=Instant(T0))
    assert isinstance(topic, TopicPublished)
    assert (topic.topic, topic.line_number) == ("c", 3)
    assert position == EventsFileRead(offset=Count(15), lines=Count(3), at=Instant(T0))
    state = fold(facts, state)
    assert state.termination is None
    assert state.ledger.anomalies == 0
    assert (state.intake.events_offset, state.intake.events_lines) == (15, 3)
    assert _read_on(path, state) == ()


def test_reading_the_same_position_twice_gives_the_same_facts(tmp_path: Path) -> None:
    """A resumed run redoes the read from the logged position: same lines, same numbers."""
    path = tmp_path / "events.jsonl"
    for index in range(5):
        emit(path, f"step.{index}", str(index))
    first = read_agent_events(path, 0, 0, _clock)
    again = read_agent_events(path, 0, 0, _clock)
    assert first == again
    state = fold(first, _started())
    assert state.intake.topics_published == 5
    assert _read_on(path, state) == ()


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    chunks=st.lists(
        st.one_of(
            st.binary(max_size=40),
            st.sampled_from([b'{"topic": "a.b", "payload": [1]}\n', b"\n", b"{bad\n", b'{"to']),
        ),
        max_size=12,
    )
)
def test_reading_after_every_append_equals_one_read_at_the_end(
    tmp_path_factory: pytest.TempPathFactory, chunks: list[bytes]
) -> None:
    """Whatever bytes arrive in whatever pieces, reading on from the logged position after each
    piece gives the same lines, numbers and end position as reading once at the end."""
    path = tmp_path_factory.mktemp("events") / "events.jsonl"
    path.touch()
    state = _started(max_malformed=10_000)
    incremental: list[PipelineEvent] = []
    for chunk in chunks:
        _append(path, chunk)
        facts = _read_on(path, state)
        incremental.extend(facts)
        state = fold(facts, state)
    at_once = read_agent_events(path, 0, 0, _clock)

    def lines(facts: Sequence[PipelineEvent]) -> list[PipelineEvent]:
        return [f for f in facts if not isinstance(f, EventsFileRead)]

    assert lines(incremental) == lines(at_once)
    final = fold(at_once, _started(max_malformed=10_000))
    assert (state.intake.events_offset, state.intake.events_lines) == (
        final.intake.events_offset,
        final.intake.events_lines,
    )
    assert state.ledger.anomalies == 0


HOSTILE_LINES = (
    (b'{"topic": "a", "payload": "\xff"}', "not valid UTF-8"),
    (b'{"topic": "a", "payload": ' + b"[" * 500 + b"]" * 500 + b"}", "more than 64 levels"),
    # Parsed, and once kept as a payload, but then one level too deep to store as an event.
    (b'{"topic": "a", "payload": ' + b"[" * 254 + b"]" * 254 + b"}", "more than 64 levels"),
    (b'{"topic": "a", "payload": ' + b"[" * 65 + b"]" * 65 + b"}", "more than 64"),
    (b'{"topic": "' + b"t" * 201 + b'"}', "over 200"),
    (b'{"topic": "a..b"}', "empty segment"),
    (b'{"topic": "a", "payload": 1' + b"0" * 400 + b"}", "number is infinity"),
    (b'{"topic": "a", "payload": "\\ud800"}', "surrogate"),
    (b'{"topic": "a", "payload": NaN}', "invalid JSON"),
    (b'{"topic": "a", "payload": ' + b"[" * 1100 + b"]" * 1100 + b"}", "depth limit"),
    (b'{"topic": "a", "ts": "0001-01-01T00:00:00+14:00"}', "ts is out of range"),
)
"""Lines a hostile agent wrote that once crashed the intake (and every resume after it)."""


@pytest.mark.parametrize(("line", "why"), HOSTILE_LINES)
def test_a_hostile_line_is_a_malformed_line_and_reading_moves_past_it(
    tmp_path: Path, line: bytes, why: str
) -> None:
    """Invalid UTF-8 in a string, a payload nested hundreds or a thousand levels deep, a time
    that leaves the calendar in UTC: each is one ``OutputLineMalformed`` saying why, the valid
    line after it is a topic, and the position moves past both, so a resume never meets it."""
    path = tmp_path / "events.jsonl"
    _append(path, line + b'\n{"topic": "after"}\n')
    facts = read_agent_events(path, 0, 0, _clock)
    malformed = [f for f in facts if isinstance(f, OutputLineMalformed)]
    assert len(malformed) == 1
    assert why in malformed[0].error
    assert [f.topic for f in facts if isinstance(f, TopicPublished)] == ["after"]
    position = facts[-1]
    assert isinstance(position, EventsFileRead)
    assert position.offset == path.stat().st_size
    assert position.lines == 2
    state = _started()
    for fact in facts:
        state = reduce(state, fact)
    assert state.ledger.anomalies == 0
    assert state.intake.malformed_lines == 1
