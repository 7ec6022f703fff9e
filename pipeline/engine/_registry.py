"""Handlers looked up by effect type, so an embedding application can replace any of them."""

from __future__ import annotations

from collections.abc import Mapping

from pipeline import PipelineError
from pipeline.core.effects import Effect
from pipeline.handlers import EffectHandler, HandlerResult

__all__ = ["HandlerRegistry", "MissingHandlerError"]


class MissingHandlerError(PipelineError, LookupError):
    """No handler is registered for an effect the run asked for."""


class HandlerRegistry:
    """An :class:`EffectHandler` that dispatches on the effect's type.

    ``HandlerRegistry({InvokeAgent: my_agents}, fallback=world)`` sends agent invocations to
    ``my_agents`` and everything else to ``world``.
    """

    def __init__(
        self,
        handlers: Mapping[type, EffectHandler] | None = None,
        fallback: EffectHandler | None = None,
    ) -> None:
        self._handlers: dict[type, EffectHandler] = dict(handlers or {})
        self._fallback = fallback

    def __call__(self, effect: Effect) -> HandlerResult:
        """Carry out ``effect`` with its registered handler (or the fallback)."""
        handler = self._handlers.get(type(effect), self._fallback)
        if handler is None:
            raise MissingHandlerError(f"no handler is registered for {type(effect).__name__}")
        return handler(effect)
