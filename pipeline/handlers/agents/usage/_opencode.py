"""Usage from ``opencode run --format json`` (pure).

opencode prints one JSON event per line. Each model request of the session ends with a
``step_finish`` event whose ``part`` holds ``tokens`` (``input``, ``output``, ``reasoning``,
``cache.read``, ``cache.write``) and ``cost``; ``sessionID`` names the session. ``input``
already leaves out the tokens read from or written to the cache, and ``output`` leaves out
the reasoning tokens, which are billed as output, so they are added to it. The steps are
summed; each is one turn.

opencode prices a request from its own model table; a model it has no price for (any custom
provider's model without ``cost`` in ``opencode.json``) costs ``0``. A total of 0 therefore
says nothing and is not reported (``cost_usd`` None): only a positive cost is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.handlers.agents.usage._figures import UsageFigures, count, json_object

__all__ = ["parse_opencode"]


def _count(value: Any) -> int:
    """A token count as given, 0 for anything that is not a non-negative integer."""
    return count(value) or 0


def _cost(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return 0.0


def parse_opencode(lines: Iterable[bytes]) -> UsageFigures:
    """The usage opencode's JSON events report (every field None when it says nothing)."""
    steps = 0
    input_tokens = output_tokens = cache_read = cache_write = 0
    cost = 0.0
    session: str | None = None
    for line in lines:
        event = json_object(line)
        if event is None:
            continue
        if session is None and isinstance(event.get("sessionID"), str):
            session = event["sessionID"]
        part = event.get("part")
        if event.get("type") != "step_finish" or not isinstance(part, Mapping):
            continue
        tokens = part.get("tokens")
        if not isinstance(tokens, Mapping):
            continue
        steps += 1
        cache = tokens.get("cache")
        cache = cache if isinstance(cache, Mapping) else {}
        input_tokens += _count(tokens.get("input"))
        output_tokens += _count(tokens.get("output")) + _count(tokens.get("reasoning"))
        cache_read += _count(cache.get("read"))
        cache_write += _count(cache.get("write"))
        cost += _cost(part.get("cost"))
    if not steps:
        return UsageFigures(session_id=session)
    return UsageFigures(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
        turns=steps,
        session_id=session,
        cost_usd=cost if cost > 0 else None,
    )
