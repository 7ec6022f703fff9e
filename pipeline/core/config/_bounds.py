"""Range and character checks of ``ralph.toml`` values, made before anything is written (pure).

A number a run would only trip over later (a ``max_runtime_s`` past what a clock can add, a
timeout of -1, a count past 64 bits) and a NUL in a string (no program argument, path or
topic can hold one; stored, it broke every resume) are refused when the file is parsed, one
line naming the key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from pipeline.core.config._model import RalphConfig
from pipeline.events.values import MAX_COUNT

__all__ = ["LIMIT", "check_ranges", "find_nul"]

LIMIT: Final = 1_000_000_000
"""The largest count, number of seconds or milliseconds a setting takes: about 31 years in
seconds, far inside what dates, timers and the wire format can hold."""

_BUDGETS: Final = {
    "max_iterations": 1,
    "max_review_passes": 0,
    "max_retries_per_agent": 0,
    "backoff_base_ms": 0,
    "backoff_cap_ms": 0,
    "max_consecutive_failures": 1,
    "max_consecutive_malformed": 1,
    "max_runtime_s": 1,
}
"""``[budgets]`` integers and their least value (the most is :data:`LIMIT`)."""

_LOOP: Final = (
    "stale_repeats",
    "max_task_blocks",
    "max_abandoned_tasks",
    "human_timeout_s",
    "max_formatting_retries",
)
"""``[loop]`` integers: 0 (off) to :data:`LIMIT`."""


def _range(key: str, value: int | None, low: int, high: int = LIMIT) -> Iterator[str]:
    if value is not None and not low <= value <= high:
        off = " (off)" if low == 0 and key.startswith("loop.") else ""
        yield f"{key}: must be from {low}{off} to {high}, got {value}"


def check_ranges(config: RalphConfig) -> list[str]:
    """Every integer setting outside its range, one line each, naming the key."""
    problems: list[str] = []
    budgets = config.budgets
    for name, low in _BUDGETS.items():
        problems.extend(_range(f"budgets.{name}", getattr(budgets, name), low))
    problems.extend(_range("budgets.max_tokens", budgets.max_tokens, 1, MAX_COUNT))
    for name in _LOOP:
        problems.extend(_range(f"loop.{name}", getattr(config.loop, name), 0))
    problems.extend(_range("context.memory_chars", config.context.memory_chars, 0))
    for index, hook in enumerate(config.hooks):
        problems.extend(_range(f"hooks[{index}].timeout_s", hook.timeout_s, 1))
    problems.extend(_range("notify.timeout_s", config.notify.timeout_s, 1))
    for index, gate in enumerate(config.gates):
        problems.extend(_range(f"gates.{index}.timeout_s", gate.timeout_s, 1))
        problems.extend(_range(f"gates.{index}.inactivity_timeout_s", gate.inactivity_timeout_s, 1))
    problems.extend(_range("limits.max_wait_s", config.limits.max_wait_s, 0))
    for hat_name, hat in config.hats.work.items():
        problems.extend(_range(f"hats.{hat_name}.max_activations", hat.max_activations, 0))
    for agent_name, agent in config.agents.items():
        for name in ("timeout_s", "inactivity_timeout_s"):
            problems.extend(_range(f"agents.{agent_name}.{name}", getattr(agent, name), 1))
    return problems


def find_nul(data: Any, key: str = "") -> Iterator[str]:
    """A line for every key or string in the parsed TOML ``data`` that holds a NUL."""
    if isinstance(data, dict):
        for name, value in data.items():
            inner = f"{key}.{name}" if key else str(name)
            if "\0" in str(name):
                yield f"{inner!r}: a key holds a NUL character"
            else:
                yield from find_nul(value, inner)
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from find_nul(value, f"{key}[{index}]")
    elif isinstance(data, str) and "\0" in data:
        yield f"{key}: holds a NUL character (no program, path or topic can)"
