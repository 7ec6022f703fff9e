"""Schema evolution: stored events of older schema versions are upcast on read (pure).

``SCHEMA_VERSION`` covers the whole vocabulary. An event whose shape changed in version
``v + 1`` has an upcaster registered under ``(wire tag, v)`` that turns its version-``v`` JSON
into version ``v + 1``; every other event passes through unchanged. One upcaster needs more
than the event: a structured response written before version 8 carries no verdict, and only
its run's schema can give it one. The reader supplies a :data:`Judge` for that (the stores
do, with the schema from the run's start); the pure layers never validate. Stored data is never
rewritten: a log written by an older release still replays, and stays as it was written.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from typing import Any, Final

import orjson

from pipeline import WireFormatError
from pipeline.core.serialization._codec import CONVERTER, decode_event
from pipeline.events import SCHEMA_VERSION, LoopPolicy, PipelineEvent

__all__ = ["UPCASTERS", "Judge", "Upcaster", "decode_stored_event", "upcast"]

Upcaster = Callable[[dict[str, Any]], dict[str, Any]]
"""Turns one event's JSON object from version ``v`` into version ``v + 1``."""

Judge = Callable[[str, str], tuple[str, tuple[str, ...]]]
"""The verdict on a structured response written before version 8: ``(role, raw response)``
-> ``(status, problems)`` as :class:`~pipeline.events.ResponseSubmitted` records them."""


def _plan_produced_v1(data: dict[str, Any]) -> dict[str, Any]:
    # Version 1 planned once, before the first iteration: that is the plan's iteration.
    return {**data, "iteration": 1}


def _topic_published_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 2 kept no emission time (its payload, a string, is already a JSON value).
    return {**data, "emitted_at": None}


def _run_completed_v2(data: dict[str, Any]) -> dict[str, Any]:
    # Version 2 did not record why the run ended; the fold still knows, the fact cannot.
    return {**data, "reason": None}


def _run_started_v3(data: dict[str, Any]) -> dict[str, Any]:
    # Version 3 had no loop control: its runs replay with every detector and promise off,
    # so topics they published mean now what they meant when they were folded.
    return {**data, "loop": CONVERTER.unstructure(LoopPolicy.off())}


def _response_submitted_v7(data: dict[str, Any], judge: Judge | None, what: str) -> dict[str, Any]:
    # Version 7 left the verdict to the reducer; it is made once now, against the run's schema.
    if judge is None:
        raise WireFormatError(
            f"{what}: a structured response written before schema version 8 is read only "
            "through its run's log (its verdict needs the run's response schema)"
        )
    status, problems = judge(str(data.get("role")), str(data.get("raw_response")))
    return {**data, "status": status, "problems": list(problems)}


UPCASTERS: Final[Mapping[tuple[str, int], Upcaster]] = types.MappingProxyType(
    {
        ("planning.plan_produced", 1): _plan_produced_v1,
        ("agent.topic_published", 2): _topic_published_v2,
        ("lifecycle.run_completed", 2): _run_completed_v2,
        ("lifecycle.run_started", 3): _run_started_v3,
    }
)
"""``(wire tag, version)`` -> the upcaster to version + 1."""


def upcast(
    data: dict[str, Any], version: int, what: str = "event", judge: Judge | None = None
) -> dict[str, Any]:
    """``data`` (an event's JSON object written at ``version``) as of ``SCHEMA_VERSION``;
    ``judge`` gives an old structured response its verdict."""
    if version > SCHEMA_VERSION:
        raise WireFormatError(
            f"{what} was written with schema version {version}, by a newer release; "
            f"this release reads versions up to {SCHEMA_VERSION}"
        )
    if version < 1:
        raise WireFormatError(f"{what} has an invalid schema version {version}")
    tag = data.get("type")
    while version < SCHEMA_VERSION:
        step = UPCASTERS.get((str(tag), version))
        if step is not None:
            data = step(data)
        elif tag == "agent.response_submitted" and version == 7:
            data = _response_submitted_v7(data, judge, what)
        version += 1
    return data


def decode_stored_event(
    body: bytes | str, version: int, what: str = "event", judge: Judge | None = None
) -> PipelineEvent:
    """The event stored as ``body`` at schema ``version``, upcast to the current schema
    (``judge``: see :func:`upcast`)."""
    if version == SCHEMA_VERSION:
        return decode_event(body, what)
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise WireFormatError(f"{what} is not valid JSON: {error}") from error
    if not isinstance(data, dict):
        raise WireFormatError(f"{what}: expected a JSON object, got {type(data).__name__}")
    return decode_event(orjson.dumps(upcast(data, version, what, judge)), what)
