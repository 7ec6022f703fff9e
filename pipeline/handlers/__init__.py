"""Handlers: the only layer that does I/O. Each carries out one effect and reports events.

Its names are imported on first use, so that importing one handler package (``ralph emit``
needs the intake's) does not load the effects and events."""

from __future__ import annotations

from pipeline.handlers._lazy import lazy_names

# ``typing`` is imported for the type checker only: ``ralph emit`` loads this module, and
# an agent runs it once per topic.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from pipeline.handlers._protocol import (
        EffectHandler,
        EffectSpan,
        EffectTracer,
        HandlerResult,
        facts_of,
        steps_of,
    )

__all__ = ["EffectHandler", "EffectSpan", "EffectTracer", "HandlerResult", "facts_of", "steps_of"]

__getattr__ = lazy_names(__name__, globals())
