"""Usage from Claude Code's ``stream-json`` output (pure).

Claude Code in print mode with ``--output-format stream-json --verbose`` writes one JSON
object per line: a ``system`` line (subtype ``init``) naming the session and the model, one
``assistant`` line per content block the model sent, ``user`` lines with tool results, and at
the end one ``result`` line with the totals of the invocation: ``usage`` (``input_tokens``
not read from cache, as the Messages API counts them, ``output_tokens``,
``cache_read_input_tokens``, ``cache_creation_input_tokens``), ``num_turns``,
``duration_api_ms``, ``session_id`` and ``total_cost_usd``, which the CLI computes itself.
A ``system`` line of subtype ``api_retry`` tells of a failed request Claude Code retries itself
(``error_status``, ``retry_delay_ms``): a run's slow invocation says why.

Without a ``result`` line (the agent was killed or timed out) the input and cache tokens are
added up over the distinct messages of the ``assistant`` lines, which carry the usage the
stream started with; their output counts are not final, so output, cost and turns (Claude
Code counts a turn per tool result, not per request) are not reported. A model of
``<synthetic>`` is Claude Code's own stand-in for a failed request, not a model.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pipeline.handlers.agents.usage._figures import UsageFigures, count, json_object, mapping

__all__ = ["parse_claude"]


def _dollars(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        amount = float(value)
        return amount if math.isfinite(amount) and amount >= 0 else None
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _model(value: Any) -> str | None:
    name = _text(value)
    return None if name is None or name.startswith("<") else name


def _from_result(result: Mapping[str, Any], model: str | None) -> UsageFigures:
    usage = mapping(result.get("usage"))
    return UsageFigures(
        model=model,
        input_tokens=count(usage.get("input_tokens")),
        output_tokens=count(usage.get("output_tokens")),
        cache_read_tokens=count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=count(usage.get("cache_creation_input_tokens")),
        turns=count(result.get("num_turns")),
        session_id=_text(result.get("session_id")),
        api_duration_ms=count(result.get("duration_api_ms")),
        cost_usd=_dollars(result.get("total_cost_usd")),
    )


def _from_messages(
    messages: Mapping[str, Mapping[str, Any]], model: str | None, session: str | None
) -> UsageFigures:
    if not messages:
        return UsageFigures(model=model, session_id=session)

    def total(key: str) -> int | None:
        counts = [count(usage.get(key)) for usage in messages.values()]
        return None if any(c is None for c in counts) else sum(c for c in counts if c)

    return UsageFigures(
        model=model,
        input_tokens=total("input_tokens"),
        cache_read_tokens=total("cache_read_input_tokens"),
        cache_write_tokens=total("cache_creation_input_tokens"),
        session_id=session,
    )


def parse_claude(lines: Iterable[bytes]) -> UsageFigures:
    """The usage Claude Code's ``stream-json`` output reports (every field None when it says
    nothing); never raises on what the agent printed."""
    model: str | None = None
    session: str | None = None
    result: Mapping[str, Any] | None = None
    messages: dict[str, Mapping[str, Any]] = {}
    statuses: list[int | None] = []
    waited = 0
    for line in lines:
        record = json_object(line)
        if record is None:
            continue
        kind = record.get("type")
        if kind == "system" and record.get("subtype") == "init":
            model = _model(record.get("model")) or model
            session = _text(record.get("session_id")) or session
        elif kind == "system" and record.get("subtype") == "api_retry":
            # Claude Code retrying a failed request itself (a 429, a 529) before it answers.
            statuses.append(count(record.get("error_status")))
            waited += count(record.get("retry_delay_ms")) or 0
        elif kind == "assistant" and record.get("parent_tool_use_id") is None:
            # The main conversation only: a subagent's messages are in the result's totals.
            message = mapping(record.get("message"))
            model = _model(message.get("model")) or model
            ident = _text(message.get("id"))
            if ident is not None and _model(message.get("model")) is not None:
                messages[ident] = mapping(message.get("usage"))
        elif kind == "result":
            result = record
    figures = (
        _from_result(result, model)
        if result is not None
        else _from_messages(messages, model, session)
    )
    if not statuses:
        return figures
    return attrs.evolve(figures, own_retries=tuple(statuses), own_retry_wait_ms=waited)
