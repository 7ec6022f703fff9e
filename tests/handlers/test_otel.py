"""OpenTelemetry tracing: one span per effect, its attributes read from the facts."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from pipeline.engine import RunOptions, TracingObserver, run_durable
from pipeline.engine.simulation import (
    ScriptedChooser,
    SimulatedWorld,
    WorldConfig,
    default_chains,
    fake_clock,
)
from pipeline.events import WIRE_TAGS, Instant
from pipeline.handlers.otel import OpenTelemetryTracer
from pipeline.handlers.store import SqliteEventStore
from tests.support import budget

T = Instant(datetime(2026, 6, 1, tzinfo=UTC))


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Spans kept in memory by a real SDK provider."""
    exported = InMemorySpanExporter()
    yield exported
    exported.shutdown()


def _traced_run(
    tmp_path: Path, exporter: InMemorySpanExporter, answers: dict[str, list[object]]
) -> tuple[list[ReadableSpan], list[str], str]:
    """A simulated run traced into ``exporter``: its spans, the stored log's tags, its id."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = WorldConfig(
        budget=budget(),
        chains=default_chains(("claude", "codex")),
        rebase_onto=None,
        run_id="otel-1",
    )
    world = SimulatedWorld(
        config=config,
        chooser=ScriptedChooser(answers=answers),
        clock=fake_clock(step=timedelta(seconds=1), start=T),
    )
    with SqliteEventStore(tmp_path / "pipeline.db") as store:
        run = run_durable(
            store,
            world,
            observer=TracingObserver(OpenTelemetryTracer(provider.get_tracer("test"))),
            options=RunOptions(clock=lambda: T),
        )
        tags = [WIRE_TAGS[type(event)] for event in store.read(run.run_id)]
    provider.shutdown()
    return list(exporter.get_finished_spans()), tags, run.run_id


def test_every_effect_is_one_span_whose_facts_are_the_stored_log_in_order(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """The spans, in order, hold exactly the run's stored facts: one span per effect carried
    out (the first, StartRun, before the run had an id), each fact a span event."""
    spans, tags, run_id = _traced_run(tmp_path, exporter, {})
    assert spans[0].name == "ralph start_run"
    assert spans[0].attributes is not None
    assert "ralph.run_id" not in spans[0].attributes
    recorded: list[str] = []
    for span in spans:
        attributes = span.attributes
        assert attributes is not None
        facts = list(attributes["ralph.facts"])  # type: ignore[arg-type]
        assert [event.name for event in span.events] == facts
        assert span.name == f"ralph {attributes['ralph.effect']}"
        if span is not spans[0]:
            assert attributes["ralph.run_id"] == run_id
            assert attributes["ralph.sequence"] == len(recorded)
        recorded.extend(facts)
    assert recorded == tags
    assert "ralph save_checkpoint" in {span.name for span in spans}
    assert all(span.status.status_code is StatusCode.UNSET for span in spans)


def test_a_failed_invocation_marks_its_span_as_an_error_with_the_facts_fields(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """An agent that fails gives an ERROR span saying why, with the effect's and the facts'
    fields as attributes; the retried invocation's span is not an error."""
    spans, _tags, _run_id = _traced_run(
        tmp_path, exporter, {"planner outcome": ["retriable_failure"]}
    )
    invocations = [span for span in spans if span.name == "ralph invoke_agent"]
    failed, retried = invocations[0], invocations[1]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.status.description == "agent.invocation_failed: exit status 1 (attempt 1)"
    assert failed.attributes is not None
    assert failed.attributes["ralph.effect.role"] == "planner"
    assert failed.attributes["ralph.effect.agent"] == "claude"
    event = next(e for e in failed.events if e.name == "agent.invocation_failed")
    assert event.attributes is not None
    assert event.attributes["retriable"] is True
    assert event.attributes["error"] == "non_zero_exit"
    assert retried.status.status_code is StatusCode.UNSET
    assert retried.attributes is not None
    assert retried.attributes["ralph.effect.attempt"] == 2


def test_a_handler_that_raises_ends_its_span_with_the_exception(
    tmp_path: Path, exporter: InMemorySpanExporter
) -> None:
    """A bug in a handler still ends the span, recorded as an error with the exception."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = WorldConfig(
        budget=budget(), chains=default_chains(("claude",)), rebase_onto=None, run_id="otel-2"
    )
    world = SimulatedWorld(
        config=config, chooser=ScriptedChooser(answers={}), clock=fake_clock(start=T)
    )
    calls = 0

    def breaks_on_the_third(effect: object) -> object:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise RuntimeError("handler bug")
        return world(effect)  # type: ignore[arg-type]

    with (
        SqliteEventStore(tmp_path / "pipeline.db") as store,
        pytest.raises(RuntimeError, match="handler bug"),
    ):
        run_durable(
            store,
            breaks_on_the_third,
            observer=TracingObserver(OpenTelemetryTracer(provider.get_tracer("test"))),
            options=RunOptions(clock=lambda: T),
        )
    last = exporter.get_finished_spans()[-1]
    assert last.status.status_code is StatusCode.ERROR
    assert [event.name for event in last.events] == ["exception"]
