"""Usage from Gemini CLI's ``--output-format stream-json`` output (pure).

Gemini CLI prints one JSON object a line: ``init`` (``session_id``, ``model``), ``message``
(the user's prompt, then the assistant's text in ``delta`` pieces), ``tool_use`` and
``tool_result``, ``error`` (warnings), and last ``result`` with ``stats``: ``input_tokens``
(every prompt token, cached ones included), ``cached``, ``input`` (the tokens not read from a
cache), ``output_tokens``, ``duration_ms`` (the session's wall time, 0 when it failed) and
``models``, the same per model. It reports no cost: ``cost_usd`` stays None.

It reports no number of model turns either; each run of assistant lines (text and tool
calls) between the tool results is one model answer, so those runs are counted. Its stderr
(warnings, retry notices) is merged into the same log and skipped, as is anything that is not
a JSON object with a known ``type``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from pipeline.handlers.agents.usage._figures import UsageFigures, count, json_object

__all__ = ["parse_gemini"]

_AUTO_MODELS: Final = frozenset({"", "auto"})
"""What ``init`` names when Gemini CLI routes each request to a model of its choosing."""


def _busiest_model(models: Any) -> str | None:
    """The model that used the most tokens, when the CLI routed requests to several."""
    if not isinstance(models, Mapping):
        return None
    totals = {
        name: count(figures.get("total_tokens")) or 0
        for name, figures in models.items()
        if isinstance(name, str) and isinstance(figures, Mapping)
    }
    return max(totals, key=totals.__getitem__) if totals else None


def _from_stats(stats: Mapping[str, Any], figures: dict[str, Any]) -> None:
    prompt = count(stats.get("input_tokens"))
    cached = count(stats.get("cached"))
    fresh = count(stats.get("input"))
    if fresh is None and prompt is not None:
        fresh = max(0, prompt - (cached or 0))
    figures["input_tokens"] = fresh
    figures["output_tokens"] = count(stats.get("output_tokens"))
    figures["cache_read_tokens"] = cached
    duration = count(stats.get("duration_ms"))
    figures["api_duration_ms"] = duration or None
    figures["result_model"] = _busiest_model(stats.get("models"))


def parse_gemini(lines: Iterable[bytes]) -> UsageFigures:
    """The usage Gemini CLI's stream-json output reports (every field None when it says
    nothing; the last ``result`` line counts)."""
    figures: dict[str, Any] = {}
    session_id: str | None = None
    init_model: str | None = None
    turns = 0
    answering = False
    seen_result = False
    for line in lines:
        event = json_object(line)
        if event is None:
            continue
        kind = event.get("type")
        if kind == "init":
            if isinstance(event.get("session_id"), str):
                session_id = event["session_id"]
            if isinstance(event.get("model"), str):
                init_model = event["model"]
        elif kind == "tool_use" or (kind == "message" and event.get("role") == "assistant"):
            if not answering:
                turns += 1
            answering = True
        elif kind == "tool_result" or (kind == "message" and event.get("role") == "user"):
            answering = False
        elif kind == "result" and isinstance(event.get("stats"), Mapping):
            seen_result = True
            _from_stats(event["stats"], figures)
    model = init_model if init_model not in _AUTO_MODELS else None
    return UsageFigures(
        model=model or figures.get("result_model"),
        input_tokens=figures.get("input_tokens"),
        output_tokens=figures.get("output_tokens"),
        cache_read_tokens=figures.get("cache_read_tokens"),
        turns=turns if (turns or seen_result) else None,
        session_id=session_id,
        api_duration_ms=figures.get("api_duration_ms"),
    )
