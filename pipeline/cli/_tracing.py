"""``--otel`` and ``--otel-file``: OpenTelemetry spans for a run from the command line (I/O)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pipeline.errors import PipelineError
from pipeline.handlers import EffectTracer

__all__ = ["TracingSetupError", "tracing"]

_INSTALL_HINT = (
    "OpenTelemetry is not installed; install the extra: pip install 'ralph-pipeline[otel]'"
)


class TracingSetupError(PipelineError, ValueError):
    """Tracing was asked for but cannot be set up; the message says why."""


@contextlib.contextmanager
def tracing(command: str, *, otel: bool, otel_file: Path | None) -> Iterator[EffectTracer | None]:
    """The tracer a run command uses, inside a ``ralph <command>`` span that parents the run's
    effect spans (None when neither option is given).

    ``otel`` sends spans to the globally configured provider (as set up by
    ``opentelemetry-instrument``); ``otel_file`` writes them to a file, one JSON span per line.
    """
    if not otel and otel_file is None:
        yield None
        return
    try:
        from opentelemetry import trace  # only with the optional extra

        from pipeline.handlers.otel import (
            INSTRUMENTATION_NAME,
            OpenTelemetryTracer,
            json_lines_provider,
        )
    except ImportError as error:
        raise TracingSetupError(_INSTALL_HINT) from error
    with contextlib.ExitStack() as stack:
        if otel_file is None:
            tracer = trace.get_tracer(INSTRUMENTATION_NAME)
        else:
            try:
                out = stack.enter_context(otel_file.open("w", encoding="utf-8"))
            except OSError as error:
                raise TracingSetupError(
                    f"cannot write spans to {otel_file}: {error.strerror}"
                ) from error
            provider = json_lines_provider(out)
            stack.callback(provider.shutdown)
            tracer = provider.get_tracer(INSTRUMENTATION_NAME)
        with tracer.start_as_current_span(f"ralph {command}"):
            yield OpenTelemetryTracer(tracer)
