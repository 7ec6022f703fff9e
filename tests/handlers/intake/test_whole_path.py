"""Whatever an agent writes goes the whole way: read into facts, appended to a real store,
loaded back, folded, checkpointed, and read on after a resume; never an exception.

Hypothesis writes arbitrary bytes and arbitrary JSON with the values that once broke a stage:
nesting just under and far over every limit, integers past 64 bits and past a float,
non-finite numbers, lone surrogates and NUL in strings, invalid UTF-8 inside strings, times at
the calendar's edges.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pipeline.core.serialization import checkpoint_state, encode_checkpoint
from pipeline.core.state import PipelineState
from pipeline.events import (
    AgentName,
    Budget,
    Count,
    Digest,
    DurationMs,
    EventsFileRead,
    Instant,
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
from pipeline.handlers.intake import IntakeLimits, read_agent_events
from pipeline.handlers.store import SqliteEventStore
from pipeline.handlers.store.postgres import PostgresEventStore
from pipeline.reducers import fold

T0 = datetime(2026, 11, 1, tzinfo=UTC)
RUN = RunId("hostile")


def _clock() -> Instant:
    return Instant(T0)


def _run_started() -> RunStarted:
    budget = Budget(
        max_iterations=Ordinal(3),
        max_review_passes=Count(1),
        max_retries_per_agent=Count(1),
        backoff_base_ms=DurationMs(0),
        backoff_cap_ms=DurationMs(0),
        max_consecutive_failures=Ordinal(2),
        max_consecutive_malformed=Ordinal(1_000_000),
    )
    chains = tuple(RoleChain(role=role, agents=(AgentName("a"),)) for role in Role)
    return RunStarted(
        run_id=RUN,
        config_digest=Digest("c"),
        prompt_digest=Digest("p"),
        budget=budget,
        chains=chains,
        rebase_onto=None,
        loop=LoopPolicy.off(),
        at=T0,
    )


_SCALARS = st.one_of(
    st.integers().map(lambda n: str(n).encode()),
    st.integers(19, 420).map(lambda digits: b"9" * digits),
    st.floats(allow_nan=False, allow_infinity=False).map(orjson.dumps),
    st.sampled_from(
        [b"1e400", b"-1e400", b"1e-400", b"NaN", b"Infinity", b"-0.0", b"18446744073709551616"]
    ),
    st.text(max_size=8).map(lambda t: orjson.dumps(t)),
    st.sampled_from(
        [b'"\\ud800"', b'"\\udfff\\ud800"', b'"a\\u0000b"', b'"\xff\xfe"', b'"\xed\xa0\x80"']
    ),
    st.binary(max_size=6).map(lambda b: b'"' + b.replace(b'"', b"") + b'"'),
    st.sampled_from([b"null", b"true", b"false"]),
)


def _array(items: list[bytes]) -> bytes:
    return b"[" + b",".join(items) + b"]"


def _object(items: list[tuple[bytes, bytes]]) -> bytes:
    return b"{" + b",".join(key + b":" + value for key, value in items) + b"}"


_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(_array),
        st.lists(st.tuples(_SCALARS, inner), max_size=3).map(_object),
    ),
    max_leaves=8,
)
_EDGES = st.sampled_from([64, 65, 253, 254, 1024, 1025])
_DEEP = st.tuples(
    st.one_of(_EDGES, st.integers(0, 1200)), st.sampled_from([(b"[", b"]"), (b'{"k":', b"}")])
).map(lambda spec: spec[1][0] * spec[0] + b"1" + spec[1][1] * spec[0])
_TIMES = st.one_of(
    st.sampled_from(
        [
            "0001-01-01T00:00:00+14:00",
            "0001-01-01T00:00:00Z",
            "9999-12-31T23:59:59-14:00",
            "9999-12-31T23:59:59.999999Z",
            "2026-02-30T00:00:00Z",
            "2026-06-30T23:59:60Z",
            "2026-11-01T10:00:00",
        ]
    ).map(lambda t: orjson.dumps(t)),
    _SCALARS,
)
_TOPICS = st.one_of(
    st.sampled_from(["a", "build.done", "human.interact", "task.blocked", "LOOP_COMPLETE"]),
    st.sampled_from(["a..b", ".a", "a.", "t" * 201, "t" * 200]),
    st.text(max_size=10),
).map(lambda t: orjson.dumps(t))


@st.composite
def _json_lines(draw: st.DrawFn) -> bytes:
    parts = [b'"topic":' + draw(_TOPICS)]
    if draw(st.booleans()):
        parts.append(b'"payload":' + draw(st.one_of(_DEEP, _VALUES)))
    if draw(st.booleans()):
        parts.append(b'"ts":' + draw(_TIMES))
    if draw(st.integers(0, 9)) == 0:
        parts.append(draw(_SCALARS) + b":1")
    return b"{" + b",".join(draw(st.permutations(parts))) + b"}"


_LINES = st.lists(
    st.one_of(_json_lines(), st.binary(max_size=30), st.just(b"")), min_size=1, max_size=8
)
_LIMITS = st.one_of(
    st.just(IntakeLimits()),
    st.builds(
        IntakeLimits,
        lines=st.integers(1, 4),
        bytes=st.integers(1, 400),
        line_bytes=st.integers(1, 300),
    ),
)


def _through_the_store(store_path: Path, facts: tuple[PipelineEvent, ...]) -> list[PipelineEvent]:
    with SqliteEventStore(store_path) as store:
        store.append(RUN, 0, [_run_started(), *facts])
        return list(store.read(RUN))


def _lines_of(facts: tuple[PipelineEvent, ...]) -> list[PipelineEvent]:
    return [f for f in facts if isinstance(f, TopicPublished | OutputLineMalformed)]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(lines=_LINES, unfinished=st.booleans(), limits=_LIMITS)
# One level too deep to store once inside an event (found by this test's strategy; pinned).
@example(
    lines=[b'{"topic": "a", "payload": ' + b"[" * 254 + b"]" * 254 + b"}"],
    unfinished=False,
    limits=IntakeLimits(),
)
def test_any_bytes_go_the_whole_way_and_a_resume_reads_on(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[bytes],
    unfinished: bool,
    limits: IntakeLimits,
) -> None:
    """Every complete line is accounted for by a fact (one each within the limits, one for
    all that is over); the facts store, load and fold with no anomaly; the checkpoint of the
    state round-trips; the position covers every complete line, so reading again finds
    nothing, and finishing the unfinished line is read on from there."""
    folder = tmp_path_factory.mktemp("hostile")
    path = folder / "events.jsonl"
    data = b"\n".join(lines) + (b"" if unfinished else b"\n")
    path.write_bytes(data)
    facts = read_agent_events(path, 0, 0, _clock, limits)
    stored = _through_the_store(folder / "pipeline.db", facts)
    assert stored == [_run_started(), *facts]
    state = fold(stored, PipelineState())
    assert state.ledger.anomalies == 0
    assert checkpoint_state(encode_checkpoint(state), "test") == state
    complete = data[: data.rfind(b"\n") + 1]
    assert state.intake.events_offset == len(complete)
    assert state.intake.events_lines == complete.count(b"\n")
    non_blank = [line for line in complete.split(b"\n")[:-1] if line.strip()]
    made = _lines_of(facts)
    within = sum(len(line) + 1 for line in non_blank) <= limits.bytes
    if len(non_blank) <= limits.lines and within:
        assert len(made) == len(non_blank)
    else:
        assert 1 <= len(made) <= limits.lines + 1
        assert len(
            orjson.dumps([f.content for f in made if isinstance(f, OutputLineMalformed)])
        ) < (limits.bytes + (limits.lines + 1) * 1_000)
    again = read_agent_events(path, state.intake.events_offset, state.intake.events_lines, _clock)
    assert again == ()
    with path.open("ab") as handle:
        handle.write(b"\n")
    resumed = read_agent_events(
        path, state.intake.events_offset, state.intake.events_lines, _clock, limits
    )
    last = data[len(complete) :]
    assert bool(_lines_of(resumed)) == bool(last.strip())
    final = fold(resumed, state)
    assert final.ledger.anomalies == 0
    assert final.intake.events_offset == len(data) + 1


NASTY = (
    b'{"topic": "a", "payload": "\xff"}',
    b'{"topic": "a", "payload": "nul \\u0000 inside"}',
    b'{"topic": "a", "payload": {"\\u0000": "\\u0000"}}',
    b"raw nul \x00 byte",
    b'{"topic": "a", "payload": "\\ud800"}',
    b'{"topic": "a", "payload": 18446744073709551615}',
    b'{"topic": "a", "payload": -9223372036854775808}',
    b'{"topic": "a", "payload": 1' + b"0" * 30 + b"}",
    b'{"topic": "a", "payload": 1e308}',
    b'{"topic": "a", "payload": ' + b"[" * 64 + b"]" * 64 + b"}",
    b'{"topic": "a", "payload": ' + b"[" * 254 + b"]" * 254 + b"}",
    b'{"topic": "a", "ts": "9999-12-31T23:59:59-14:00"}',
    b'{"topic": "a", "ts": "0001-01-01T00:00:00+14:00"}',
    b"\xed\xa0\x80 \xf4\x90\x80\x80",
)
"""Lines each once a crash or a refusal somewhere between the file and the store."""


def test_nasty_lines_store_in_postgresql_and_load_the_same(
    tmp_path: Path, postgres_url: str
) -> None:
    """PostgreSQL keeps what SQLite keeps: NUL escapes, 64-bit edges, 64-deep payloads and
    calendar edges are appended and read back equal (the server's JSON type checks them)."""
    path = tmp_path / "events.jsonl"
    path.write_bytes(b"\n".join(NASTY) + b"\n")
    facts = read_agent_events(path, 0, 0, _clock)
    assert len(_lines_of(facts)) == len(NASTY)
    assert isinstance(facts[-1], EventsFileRead)
    with PostgresEventStore(postgres_url) as store:
        store.append(RUN, 0, [_run_started(), *facts])
        stored = list(store.read(RUN))
    assert stored == [_run_started(), *facts]
    assert fold(stored, PipelineState()).ledger.anomalies == 0
