"""One observer of a run: what the engine reports (effects, facts, warnings, spans), in order,
and several observers combined into one."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import attrs

from pipeline.core.effects import Effect, InvokeAgent, SaveCheckpoint, StartRun
from pipeline.core.state import PipelineState
from pipeline.engine import (
    Observers,
    RunObserver,
    RunOptions,
    TracingObserver,
    run_durable,
    run_in_memory,
)
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
    simulated_policy,
)
from pipeline.events import (
    CheckpointSaved,
    Instant,
    InvocationStarted,
    PipelineEvent,
    RunId,
    RunResumed,
    RunStarted,
)
from pipeline.handlers import EffectSpan
from pipeline.handlers.store import SqliteEventStore
from pipeline.orchestration import next_effect
from pipeline.reducers import fold
from tests.engine.test_durable import _corrupt_newest_checkpoint
from tests.support import budget

T = Instant(datetime(2026, 6, 1, tzinfo=UTC))
OPTIONS = RunOptions(clock=lambda: T)


def _world() -> SimulatedWorld:
    loop = attrs.evolve(simulated_policy(), required_events=())
    config = WorldConfig(
        budget=budget(),
        chains=default_chains(("claude", "codex")),
        rebase_onto=None,
        run_id="observed",
        loop=loop,
    )
    return SimulatedWorld(
        config=config,
        chooser=ScriptedChooser(answers={}),
        clock=fake_clock(step=timedelta(0), start=T),
    )


class Recorder(RunObserver):
    """Keeps every report, in the order the engine made them."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, object]] = []
        self.states: list[PipelineState] = []

    def effect(self, effect: Effect, /) -> None:
        self.seen.append(("effect", effect))

    def event(self, state: PipelineState, event: PipelineEvent, /) -> None:
        self.seen.append(("event", event))
        self.states.append(state)

    def warning(self, message: str, /) -> None:
        self.seen.append(("warning", message))

    def of(self, kind: str) -> list[object]:
        return [what for seen, what in self.seen if seen == kind]


class Tracer:
    """An ``EffectTracer`` that keeps each span's effect and the facts recorded into it."""

    def __init__(self) -> None:
        self.spans: list[tuple[Effect, tuple[PipelineEvent, ...]]] = []

    @contextlib.contextmanager
    def effect(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> Iterator[EffectSpan]:
        recorded: list[PipelineEvent] = []

        class Span:
            def record(self, facts: Sequence[PipelineEvent], /) -> None:
                recorded.extend(facts)

        yield Span()
        self.spans.append((effect, tuple(recorded)))


def test_one_observer_sees_each_effect_then_its_facts_and_the_warnings_of_a_resume(
    tmp_path: Path,
) -> None:
    """The observer's facts are the log in order, each with the state folded to it; each
    effect comes before its own facts; a resume's warning (a damaged checkpoint) comes before
    the facts of that resume."""
    path = tmp_path / "pipeline.db"
    first = Recorder()
    with SqliteEventStore(path) as store:
        run = run_durable(
            store, _world(), observer=first, options=attrs.evolve(OPTIONS, max_effects=12)
        )
        stopped_at = len(list(store.read(run.run_id)))
    _corrupt_newest_checkpoint(path, run.run_id, "format_version", 99)
    second = Recorder()
    with SqliteEventStore(path) as store:
        run_durable(store, _world(), run_id=run.run_id, observer=second, options=OPTIONS)
        log = list(store.read(run.run_id))

    assert first.of("event") + second.of("event") == log
    states = first.states + second.states
    assert states == [fold(log[: k + 1]) for k in range(len(log))]

    assert first.seen[0] == ("effect", first.of("effect")[0])
    assert isinstance(first.of("effect")[0], StartRun)
    assert isinstance(first.seen[1][1], RunStarted)
    for seen in (first.seen, second.seen):
        for k, (kind, what) in enumerate(seen):
            if kind == "effect" and isinstance(what, InvokeAgent):
                assert isinstance(seen[k + 1][1], InvocationStarted)
            if kind == "effect" and isinstance(what, SaveCheckpoint):
                assert isinstance(seen[k + 1][1], CheckpointSaved)
    assert len(first.of("effect")) == 13  # the start, then 12

    assert first.of("warning") == []
    assert second.seen[0][0] == "warning"
    assert "unknown checkpoint format 99" in str(second.seen[0][1])
    assert second.seen[1] == ("event", log[stopped_at])
    assert isinstance(log[stopped_at], RunResumed)


def test_a_combined_observer_tells_each_of_its_observers_everything_in_the_same_order() -> None:
    """``Observers(a, b)``: both see the same reports as one observer alone; each tracing
    observer gets its own span per effect holding that effect's facts."""
    alone = Recorder()
    run_in_memory(_world(), observer=alone, options=OPTIONS)
    a, b, quiet = Recorder(), Recorder(), Recorder()
    tracer_a, tracer_b = Tracer(), Tracer()
    both = Observers(a, TracingObserver(tracer_a), quiet, Observers(b, TracingObserver(tracer_b)))
    result = run_in_memory(_world(), observer=both, options=OPTIONS)

    assert a.seen == b.seen == quiet.seen == alone.seen
    assert a.of("event") == list(result.events)
    assert tracer_a.spans == tracer_b.spans
    assert [effect for effect, _ in tracer_a.spans] == list(result.effects)
    assert [fact for _, facts in tracer_a.spans for fact in facts] == list(result.events)


def test_observers_that_do_not_trace_open_no_span() -> None:
    """The engine opens a span only when some observer traces: a combination of plain
    observers has none, one tracer's span is passed through as it is."""
    effect = next_effect(PipelineState())
    assert Observers(Recorder(), Recorder()).span(None, 0, effect) is None
    tracer = Tracer()
    span = Observers(Recorder(), TracingObserver(tracer)).span(None, 0, effect)
    assert span is not None
    with span as opened:
        opened.record(())
    assert tracer.spans == [(effect, ())]
