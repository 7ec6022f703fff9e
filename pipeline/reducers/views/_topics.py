"""The run's topic log: every topic agents published, in order, rejected lines included (pure).

A malformed line of the events file is in the topic log as ``event.malformed``, with its line
number, error and whole content as the payload, so that what was rejected is as visible as
what was accepted. The log is folded alongside, and every notice the reducer makes for the
agent is an entry too: ``<hat>.scope_violation`` (payload ``Attempted to publish '<topic>':
<payload>``), ``task.resume`` (a refused completion), ``build.task.abandoned``,
``human.response`` and ``human.timeout``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import final

from attrs import frozen

from pipeline.core.state import PipelineState
from pipeline.events import (
    MALFORMED_TOPIC,
    Count,
    Instant,
    Json,
    OutputLineMalformed,
    PipelineEvent,
    TopicPublished,
)
from pipeline.reducers import steps

__all__ = ["TopicEntry", "topic_log"]


@final
@frozen(kw_only=True)
class TopicEntry:
    """One entry of the topic log: ``topic`` with ``payload``, from line ``line_number``."""

    line_number: int
    topic: str
    payload: Json
    at: Instant
    """When the engine read the line."""
    hat: str | None = None
    """Who it came from: the hat (or role) at work when the line was read, ``ralph`` for a
    notice of ralph's, None when no agent was at work (a person's answer)."""


def topic_log(events: Iterable[PipelineEvent]) -> Iterator[TopicEntry]:
    """The topic log of a run's ``events``, in log order."""
    for before, event, state in steps(events):
        who = _wearer(before)
        if isinstance(event, TopicPublished):
            # An out-of-scope topic shows only as its hat's scope violation, below.
            if state.intake.scope_violations == before.intake.scope_violations:
                yield TopicEntry(
                    line_number=event.line_number,
                    topic=event.topic,
                    payload=event.payload,
                    at=event.at,
                    hat=who,
                )
        elif isinstance(event, OutputLineMalformed):
            payload = Json.of(
                {"line": event.line_number, "error": event.error, "content": event.content}
            )
            yield TopicEntry(
                line_number=event.line_number,
                topic=MALFORMED_TOPIC,
                payload=payload,
                at=event.at,
                hat=who,
            )
        made = state.intake.notices_total - before.intake.notices_total
        if made > 0:
            for notice in state.intake.notices[-made:]:
                payload = Json.of(notice.text)
                yield TopicEntry(
                    line_number=Count(notice.line_number),
                    topic=notice.topic,
                    payload=payload,
                    at=event.at,
                    hat="ralph",
                )


def _wearer(state: PipelineState) -> str | None:
    """The hat (else the role) whose lines the intake reads now; None when no agent is."""
    publisher = state.intake.publisher
    if publisher is None:
        return None
    hat = state.run.loop.hat(publisher) if state.run is not None else None
    return publisher.value if hat is None else hat.name
