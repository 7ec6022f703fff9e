"""Handlers: the only layer that does I/O. Each carries out one effect and reports events.

Its names are imported on first use, so that importing one handler package (``ralph emit``
needs the intake's) does not load the effects and events."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline._lazy import lazy_names

if TYPE_CHECKING:
    from pipeline.handlers._protocol import EffectHandler, EffectSpan, EffectTracer

__all__ = ["EffectHandler", "EffectSpan", "EffectTracer"]

_SOURCES = {
    "EffectHandler": ("pipeline.handlers._protocol", "EffectHandler"),
    "EffectSpan": ("pipeline.handlers._protocol", "EffectSpan"),
    "EffectTracer": ("pipeline.handlers._protocol", "EffectTracer"),
}
"""Where each public name is defined: (module, name)."""


__getattr__ = lazy_names(__name__, globals(), _SOURCES)
