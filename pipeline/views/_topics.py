"""The run's topic log: every topic agents published, in order, rejected lines included (pure).

A malformed line of the events file is in the topic log as ``event.malformed``, with its line
number, error and whole content as the payload, so that what was rejected is as visible as
what was accepted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import final

from attrs import frozen

from pipeline.events import (
    MALFORMED_TOPIC,
    Instant,
    Json,
    OutputLineMalformed,
    PipelineEvent,
    TopicPublished,
)

__all__ = ["TopicEntry", "topic_log"]


@final
@frozen
class TopicEntry:
    """One entry of the topic log: ``topic`` with ``payload``, from line ``line_number``."""

    line_number: int
    topic: str
    payload: Json
    at: Instant
    """When the engine read the line."""


def topic_log(events: Iterable[PipelineEvent]) -> Iterator[TopicEntry]:
    """The topic log of a run's ``events``, in log order."""
    for event in events:
        if isinstance(event, TopicPublished):
            yield TopicEntry(event.line_number, event.topic, event.payload, event.at)
        elif isinstance(event, OutputLineMalformed):
            payload = Json.of(
                {"line": event.line_number, "error": event.error, "content": event.content}
            )
            yield TopicEntry(event.line_number, MALFORMED_TOPIC, payload, event.at)
