"""OpenTelemetry spans for a run: one span per effect, its attributes read from the facts.

Needs the optional extra ``otel`` (``pip install 'ralph-pipeline[otel]'``). Like any library
instrumentation, :class:`OpenTelemetryTracer` only uses the OpenTelemetry API: spans go to the
tracer provider the application configured (``opentelemetry-instrument ralph run ...`` or an
embedding program's own SDK setup), and cost next to nothing when none is configured.
:func:`json_lines_provider` is the one SDK piece, for ``ralph run --otel-file``.

A span is named after the effect's wire tag (``ralph invoke_agent``) and carries:

- ``ralph.run_id``, ``ralph.sequence`` (the state it was decided from), ``ralph.effect``;
- the effect's fields as ``ralph.effect.<field>`` (``ralph.effect.role``, ...);
- ``ralph.facts``: the wire tags of the facts it produced, in order, and one span event per
  fact named by its tag, with the fact's fields as attributes and its time as timestamp;
- status ERROR when a fact reports a failure (a failed or timed-out invocation, or any fact of
  the ``error`` category), with the first such fact's tag and message as description.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from collections.abc import Sequence as Facts
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from typing import IO, Any, Final

import orjson
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import Span, Status, StatusCode, Tracer
from opentelemetry.util.types import AttributeValue

from pipeline.core.effects import EFFECT_TAGS, Effect
from pipeline.core.serialization import CONVERTER, unstructure_event
from pipeline.events import (
    CATEGORIES,
    WIRE_TAGS,
    InvocationFailed,
    InvocationTimedOut,
    PipelineEvent,
    RunId,
    members,
)
from pipeline.handlers._protocol import EffectSpan

__all__ = ["INSTRUMENTATION_NAME", "OpenTelemetryTracer", "json_lines_provider"]

INSTRUMENTATION_NAME: Final = "ralph-pipeline"
"""The instrumentation scope of every span, for filtering them in a collector."""

_FAILURES: Final = (InvocationFailed, InvocationTimedOut, *members(CATEGORIES["error"]))


def _package_version() -> str | None:
    try:
        return version("ralph-pipeline")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return None


def _flat(prefix: str, value: Any, into: dict[str, AttributeValue]) -> None:
    """``value`` (unstructured JSON-like data) as OpenTelemetry attributes under ``prefix``."""
    match value:
        case None:
            return
        case bool() | int() | float() | str():
            into[prefix] = value
        case datetime():
            into[prefix] = value.isoformat()
        case Mapping():
            for key, item in value.items():
                _flat(f"{prefix}.{key}", item, into)
        case list() | tuple() if all(isinstance(item, str) for item in value):
            into[prefix] = [str(item) for item in value]
        case _:
            # Attribute values are scalars or homogeneous arrays; anything richer goes as JSON.
            into[prefix] = orjson.dumps(value, default=str).decode()


def _fields(prefix: str, data: Mapping[str, Any], skip: frozenset[str]) -> dict[str, Any]:
    attributes: dict[str, AttributeValue] = {}
    for key, value in data.items():
        if key not in skip:
            _flat(f"{prefix}{key}" if prefix else key, value, attributes)
    return attributes


_SKIPPED: Final = frozenset({"type"})
_EFFECT_SKIPPED: Final = frozenset({"type", "effect_id"})


class _Recorder:
    """Writes an effect's facts into its span."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def record(self, facts: Facts[PipelineEvent], /) -> None:
        """Tags, one span event per fact, and the status a failure fact gives."""
        span = self._span
        span.set_attribute("ralph.facts", [WIRE_TAGS[type(fact)] for fact in facts])
        failure: PipelineEvent | None = None
        for fact in facts:
            tag = WIRE_TAGS[type(fact)]
            data = unstructure_event(fact)
            at = getattr(fact, "at", None)
            stamp = int(at.timestamp() * 1_000_000_000) if isinstance(at, datetime) else None
            span.add_event(tag, _fields("", data, _SKIPPED), timestamp=stamp)
            if failure is None and isinstance(fact, _FAILURES):
                failure = fact
        if failure is not None:
            message = getattr(failure, "message", None)
            tag = WIRE_TAGS[type(failure)]
            span.set_status(Status(StatusCode.ERROR, f"{tag}: {message}" if message else tag))


class OpenTelemetryTracer:
    """An :class:`~pipeline.handlers.EffectTracer` that opens one OpenTelemetry span per effect.

    ``tracer`` defaults to the global provider's tracer for ``ralph-pipeline``; pass one from
    your own ``TracerProvider`` to send the spans elsewhere. Spans nest under whatever span is
    current when the run starts.
    """

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._tracer = tracer or trace.get_tracer(INSTRUMENTATION_NAME, _package_version())

    def effect(
        self, run_id: RunId | None, sequence: int, effect: Effect, /
    ) -> AbstractContextManager[EffectSpan]:
        """A span around carrying out ``effect``; see the module docstring for its attributes."""
        return self._span(run_id, sequence, effect)

    @contextmanager
    def _span(self, run_id: RunId | None, sequence: int, effect: Effect) -> Iterator[EffectSpan]:
        tag = EFFECT_TAGS[type(effect)]
        name = tag.removeprefix("effect.")
        data: dict[str, Any] = CONVERTER.unstructure(effect, unstructure_as=Effect)
        attributes = _fields("ralph.effect.", data, _EFFECT_SKIPPED)
        attributes["ralph.effect"] = name
        attributes["ralph.effect_id"] = str(effect.effect_id)
        attributes["ralph.sequence"] = sequence
        if run_id is not None:
            attributes["ralph.run_id"] = str(run_id)
        with self._tracer.start_as_current_span(f"ralph {name}", attributes=attributes) as span:
            yield _Recorder(span)


def _json_line(span: ReadableSpan) -> str:
    line: str = span.to_json(indent=None)
    return line + "\n"


def json_lines_provider(out: IO[str]) -> TracerProvider:
    """An SDK tracer provider writing each finished span to ``out`` as one JSON line.

    Call ``shutdown()`` on it when the run is over, before closing ``out``.
    """
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(ConsoleSpanExporter(out=out, formatter=_json_line))
    )
    return provider
