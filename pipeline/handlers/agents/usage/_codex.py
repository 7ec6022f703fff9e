"""Usage from ``codex exec --json`` output (pure).

Codex prints one JSON event per line. ``thread.started`` names the thread (the session id a
``codex exec resume`` takes); each ``turn.completed`` carries the usage of that turn, summed
over its model requests: ``input_tokens`` (cached tokens included, as the OpenAI API counts
them), ``cached_input_tokens``, ``cache_write_input_tokens`` (zero for the OpenAI API),
``output_tokens`` and ``reasoning_output_tokens`` (part of the output). A ``codex exec`` is
one turn, a resumed or continued one more; the turns and their usage are summed. Codex reports
neither a cost nor the model in this output, nor how long the API took.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.handlers.agents.usage._figures import UsageFigures, count, json_object

__all__ = ["parse_codex"]


def _count(usage: Mapping[str, Any], key: str) -> int:
    """The count under ``key``, 0 when there is none."""
    return count(usage.get(key)) or 0


def parse_codex(lines: Iterable[bytes]) -> UsageFigures:
    """The usage ``codex exec --json`` output reports (every field None when it says nothing).

    Input tokens are those not read from (nor written to) a cache: Codex's ``input_tokens``
    less ``cached_input_tokens`` and ``cache_write_input_tokens``.
    """
    session_id: str | None = None
    turns = 0
    uncached = cached = written = output = 0
    for line in lines:
        event = json_object(line)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            session_id = session_id or event["thread_id"]
        elif kind == "turn.completed":
            turns += 1
            usage = event.get("usage")
            if not isinstance(usage, Mapping):
                continue
            read = _count(usage, "cached_input_tokens")
            wrote = _count(usage, "cache_write_input_tokens")
            uncached += max(0, _count(usage, "input_tokens") - read - wrote)
            cached += read
            written += wrote
            output += _count(usage, "output_tokens")
    if not turns:
        return UsageFigures(session_id=session_id)
    return UsageFigures(
        input_tokens=uncached,
        output_tokens=output,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        turns=turns,
        session_id=session_id,
    )
