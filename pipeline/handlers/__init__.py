"""Handlers: the only layer that does I/O. Each carries out one effect and reports events."""

from pipeline.handlers._protocol import EffectHandler, EffectSpan, EffectTracer

__all__ = ["EffectHandler", "EffectSpan", "EffectTracer"]
