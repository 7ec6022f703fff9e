"""What an agent's output says one invocation used (pure data).

Every parser reads the log of one invocation (stdout and stderr merged, as the process runner
wrote it) and returns :class:`UsageFigures`, each field None when the output did not say. A
parser never raises on what an agent printed: unknown lines, broken JSON and a truncated last
line are skipped.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, final

import orjson
from attrs import frozen

__all__ = ["UsageFigures", "count", "json_objects", "mapping", "number", "tally"]


@final
@frozen(kw_only=True)
class UsageFigures:
    """Usage of one invocation as its CLI reported it (None: not reported)."""

    model: str | None = None
    input_tokens: int | None = None
    """Tokens sent that were not read from a cache."""
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    turns: int | None = None
    session_id: str | None = None
    api_duration_ms: int | None = None
    cost_usd: float | None = None
    """The cost the CLI itself reported, in US dollars."""
    own_retries: tuple[int | None, ...] = ()
    """The HTTP status of each failed model request the CLI retried itself (None: untold)."""
    own_retry_wait_ms: int = 0
    """How long the CLI waited before those retries, in all."""

    @property
    def retries_note(self) -> str:
        """The CLI's own retries in words ("" when it retried nothing)."""
        if not self.own_retries:
            return ""
        statuses = ", ".join("?" if s is None else str(s) for s in self.own_retries[:5])
        more = f" and {len(self.own_retries) - 5} more" if len(self.own_retries) > 5 else ""
        return (
            f"the CLI retried {len(self.own_retries)} failed model request(s) itself "
            f"(HTTP {statuses}{more}), waiting {self.own_retry_wait_ms / 1000:.1f} s"
        )

    @property
    def reported_anything(self) -> bool:
        """Whether the output said anything about usage at all."""
        return any(
            value is not None
            for value in (
                self.input_tokens,
                self.output_tokens,
                self.cache_read_tokens,
                self.cache_write_tokens,
                self.turns,
                self.cost_usd,
            )
        )


def json_objects(lines: Iterable[bytes]) -> Iterator[Mapping[str, Any]]:
    """The JSON objects of an output's lines, in order; a line that holds none (not JSON, cut
    short, or not an object) is skipped."""
    for line in lines:
        stripped = line.strip()
        if not stripped.startswith(b"{"):
            continue
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, Mapping):
            yield value


def mapping(value: Any) -> Mapping[str, Any]:
    """``value`` when it is a JSON object, else an empty one: a field an agent left out or
    gave another type reads as absent."""
    return value if isinstance(value, Mapping) else {}


def count(value: Any) -> int | None:
    """A token count or duration as printed: a non-negative integer (a JSON boolean, which
    Python takes for an int, is not one); None for anything else."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def number(value: Any, high: float = math.inf) -> float | None:
    """A finite number from 0 to ``high`` as printed (a JSON boolean is none); None for
    anything else."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value) if math.isfinite(value) and 0 <= value <= high else None
    return None


def tally(value: Any) -> int:
    """A count to add up: as printed (see :func:`count`), 0 for anything else."""
    return count(value) or 0
