"""``--otel`` and ``--otel-file``: OpenTelemetry spans for a run from the command line (I/O)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline import PipelineError
from pipeline.handlers import EffectTracer

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from pipeline.app.workers import TicketTracing
    from pipeline.handlers.store.queue import Ticket

__all__ = ["TracingSetupError", "ticket_tracing", "tracing"]

_INSTALL_HINT = (
    "OpenTelemetry is not installed; install the extra: pip install 'ralph-pipeline[otel]'"
)


class TracingSetupError(PipelineError, ValueError):
    """Tracing was asked for but cannot be set up; the message says why."""


@contextlib.contextmanager
def _otel_tracer(otel: bool, otel_file: Path | None) -> Iterator[Tracer | None]:
    """The OpenTelemetry tracer the options ask for, or None when neither is given.

    ``otel`` uses the globally configured provider (as set up by ``opentelemetry-instrument``);
    ``otel_file`` writes the spans to a file, one JSON span per line.
    """
    if not otel and otel_file is None:
        yield None
        return
    try:
        from opentelemetry import trace  # only with the optional extra

        from pipeline.handlers.otel import INSTRUMENTATION_NAME, json_lines_provider
    except ImportError as error:
        raise TracingSetupError(_INSTALL_HINT) from error
    with contextlib.ExitStack() as stack:
        if otel_file is None:
            yield trace.get_tracer(INSTRUMENTATION_NAME)
            return
        try:
            out = stack.enter_context(otel_file.open("w", encoding="utf-8"))
        except OSError as error:
            raise TracingSetupError(
                f"cannot write spans to {otel_file}: {error.strerror}"
            ) from error
        provider = json_lines_provider(out)
        stack.callback(provider.shutdown)
        yield provider.get_tracer(INSTRUMENTATION_NAME)


@contextlib.contextmanager
def tracing(command: str, *, otel: bool, otel_file: Path | None) -> Iterator[EffectTracer | None]:
    """The tracer a run command uses, inside a ``ralph <command>`` span that parents the run's
    effect spans (None when neither option is given; see :func:`_otel_tracer`)."""
    with _otel_tracer(otel, otel_file) as tracer:
        if tracer is None:
            yield None
            return
        from pipeline.handlers.otel import OpenTelemetryTracer

        with tracer.start_as_current_span(f"ralph {command}"):
            yield OpenTelemetryTracer(tracer)


@contextlib.contextmanager
def ticket_tracing(*, otel: bool, otel_file: Path | None) -> Iterator[TicketTracing | None]:
    """For ``ralph worker``: what gives each ticket's run its own trace, a ``ralph ticket``
    span (attributes ``ralph.ticket``, ``ralph.workspace``, ``ralph.claims``) parenting the
    run's effect spans (None when neither option is given)."""
    with _otel_tracer(otel, otel_file) as tracer:
        if tracer is None:
            yield None
            return
        from pipeline.handlers.otel import OpenTelemetryTracer

        @contextlib.contextmanager
        def traced(ticket: Ticket) -> Iterator[EffectTracer | None]:
            attributes: dict[str, str | int] = {
                "ralph.ticket": ticket.ticket,
                "ralph.workspace": ticket.workspace,
                "ralph.claims": ticket.claims,
            }
            # A root span of its own: a worker's tickets are unrelated runs.
            with tracer.start_as_current_span("ralph ticket", attributes=attributes):
                yield OpenTelemetryTracer(tracer)

        yield traced
