"""Where a run of a user's topology stands: the topics waiting for a hat, the hat at work and
what woke it, and each hat's activations (pure data).

A run of the built-in pipeline keeps the empty :class:`Routing` for its whole life.
"""

from __future__ import annotations

from typing import Final, final

from attrs import field, frozen

from pipeline.events.values import COUNT_VALIDATOR, Count, Json

__all__ = ["MAX_PENDING_TOPICS", "RoutedTopic", "Routing"]

MAX_PENDING_TOPICS: Final = 64
"""The most topics that wait for a hat at once; a topic past it is reported and dropped (an
agent that publishes hundreds of topics per activation would otherwise grow every state)."""


@final
@frozen(kw_only=True)
class RoutedTopic:
    """A topic on its way to a hat: published by an agent (its events-file line), or by ralph
    itself (line 0: the starting event, a default, an ``<hat>.exhausted``)."""

    topic: str
    payload: Json
    line_number: Count = field(default=Count(0), validator=COUNT_VALIDATOR)
    """The events-file line that published it (0: ralph's own)."""
    hat: str | None = None
    """The hat it is for whatever the triggers say (a refused completion goes back to the hat
    that claimed it); None: the hat it wakes."""
    activation: int = 0
    """The iteration of the hat's activation that published it (0: ralph's own): a round of
    gates that blocks that activation's work drops its topics."""


@final
@frozen(kw_only=True)
class Routing:
    """The routing part of the state (see the module's documentation)."""

    pending: tuple[RoutedTopic, ...] = ()
    """Topics waiting for a hat, oldest first."""
    hat: str | None = None
    """The hat at work, or the last one that worked (None: no hat has worked yet)."""
    trigger: RoutedTopic | None = None
    """The topic that woke ``hat``."""
    activations: tuple[tuple[str, int], ...] = ()
    """How often each hat was activated, by hat name (sorted)."""
    exhausted: frozenset[str] = frozenset()
    """Hats past their ``max_activations`` whose ``<hat>.exhausted`` was published."""
    dropped: int = 0
    """Topics reported and dropped: nobody triggers on them, their hat is exhausted, or too
    many were pending."""
