"""ralph-orchestrator's ``event_loop`` (and its v1 top-level keys) translated into
``prompt_file``, ``[budgets]`` and ``[loop]`` (pure).

A v1 top-level key wins over its ``event_loop`` key, as in ralph-orchestrator. A budget the
file leaves out keeps ralph-orchestrator's default, so the translated run is bounded as the
original was: ralph's own defaults are far smaller (5 iterations).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final, TypeVar, final

from attrs import frozen

from pipeline.core.config._orchestrator_reading import (
    Reader,
    topic_problem,
)
from pipeline.events import STARTING_EVENT

__all__ = ["ORCHESTRATOR_BUDGETS", "LoopSettings", "translate_loop"]

ORCHESTRATOR_BUDGETS: Final[Mapping[str, int]] = {
    "max_iterations": 100,
    "max_runtime_s": 14_400,
    "max_consecutive_failures": 5,
}
"""ralph-orchestrator's default budgets, by the ``[budgets]`` key they become."""

_COMPLETION_PROMISE: Final = "LOOP_COMPLETE"
"""ralph-orchestrator's default completion promise (ralph's too)."""

_UNTRANSLATED: Final[Mapping[str, str]] = {
    "prompt": "an inline prompt has no equivalent; put it in the prompt file",
    "persistent": "no equivalent (a ralph run ends when its completion promise is accepted)",
    "starting_hat": "deprecated in ralph-orchestrator; no equivalent (use starting_event)",
    "cooldown_delay_seconds": "no equivalent (ralph starts the next activation at once)",
    "mutation_score_warn_threshold": "no equivalent",
    "context_window_tokens": "no equivalent",
}
"""``event_loop`` settings with no equivalent in ralph, and why."""

_TRANSLATED: Final = frozenset(
    (
        "prompt_file",
        "completion_promise",
        "max_iterations",
        "max_runtime_seconds",
        "max_consecutive_failures",
        "max_cost_usd",
        "starting_event",
        "required_events",
        "cancellation_promise",
        "enforce_hat_scope",
    )
)


@final
@frozen(kw_only=True)
class LoopSettings:
    """What ``event_loop`` and the v1 top-level keys translate into."""

    prompt_file: str
    budgets: dict[str, object]
    """``[budgets]``, keys in a fixed order."""
    defaulted: tuple[str, ...]
    """The ``[budgets]`` keys holding ralph-orchestrator's defaults."""
    loop: dict[str, object]
    """``[loop]``, keys in a fixed order (empty: no table)."""


_T = TypeVar("_T")

_V1_KEYS: Final[Mapping[str, str]] = {
    "prompt_file": "prompt_file",
    "completion_promise": "completion_promise",
    "max_iterations": "max_iterations",
    "max_runtime_seconds": "max_runtime",
    "max_cost_usd": "max_cost",
}
"""The ``event_loop`` keys a v1 top-level key stands for, and that key."""


def _setting(
    reader: Reader,
    read: Callable[[Mapping[str, object], str, str], _T | None],
    event_loop: Mapping[str, object],
    top: Mapping[str, object],
    key: str,
) -> _T | None:
    """``event_loop.KEY``, or its v1 top-level key when given: that wins, as in
    ralph-orchestrator (the other value, when it differs, is noted as overridden)."""
    nested = read(event_loop, key, "event_loop")
    v1 = _V1_KEYS.get(key)
    flat = None if v1 is None else read(top, v1, "")
    if flat is None:
        return nested
    if nested is not None and nested != flat:
        reader.skip(f"event_loop.{key}", f"overridden by the top-level {v1} ({flat!r})")
    return flat


def _topic(reader: Reader, topic: str | None, path: str, instead: str = "left out") -> str | None:
    problem = None if topic is None else topic_problem(topic)
    if problem is not None:
        reader.skip(path, f"{problem}; {instead}")
        return None
    return topic


def translate_loop(
    reader: Reader,
    event_loop: Mapping[str, object],
    top: Mapping[str, object],
    coordinator: str,
) -> LoopSettings:
    """The settings of ``event_loop`` and of the v1 keys of ``top`` (the whole file), for a
    topology whose coordinator is the hat ``coordinator``."""
    e = "event_loop"
    prompt_file = _setting(reader, reader.text, event_loop, top, "prompt_file")
    figures: dict[str, int | float | None] = {
        "max_iterations": _setting(reader, reader.count, event_loop, top, "max_iterations"),
        "max_runtime_s": _setting(reader, reader.count, event_loop, top, "max_runtime_seconds"),
        "max_consecutive_failures": reader.count(event_loop, "max_consecutive_failures", e),
        "max_cost_usd": _setting(reader, reader.amount, event_loop, top, "max_cost_usd"),
    }
    defaulted = tuple(key for key in ORCHESTRATOR_BUDGETS if figures[key] is None)
    budgets: dict[str, object] = {
        key: ORCHESTRATOR_BUDGETS[key] if value is None else value
        for key, value in figures.items()
        if value is not None or key in ORCHESTRATOR_BUDGETS
    }

    loop: dict[str, object] = {}
    starting = _topic(reader, reader.text(event_loop, "starting_event", e), f"{e}.starting_event")
    loop["starting_event"] = starting or STARTING_EVENT
    loop["coordinator"] = coordinator
    promise_path = f"{e}.completion_promise"
    promise = _setting(reader, reader.text, event_loop, top, "completion_promise")
    instead = f"ralph's default {_COMPLETION_PROMISE} is written instead"
    if promise == "":
        reader.skip(promise_path, f"empty (refused by ralph-orchestrator); {instead}")
    kept = _topic(reader, promise or None, promise_path, instead)
    loop["completion_promise"] = kept or _COMPLETION_PROMISE
    required = [
        topic
        for topic in reader.texts(event_loop, "required_events", e) or ()
        if _topic(reader, topic, f"{e}.required_events") is not None
    ]
    if required:
        loop["required_events"] = required
    cancellation = reader.text(event_loop, "cancellation_promise", e)
    if _topic(reader, cancellation or None, f"{e}.cancellation_promise"):
        loop["cancellation_promise"] = cancellation
    scope = reader.flag(event_loop, "enforce_hat_scope", e)
    if scope is not None:
        loop["enforce_hat_scope"] = scope

    reader.rest(event_loop, e, _TRANSLATED, _UNTRANSLATED)
    return LoopSettings(
        prompt_file=prompt_file or "PROMPT.md", budgets=budgets, defaulted=defaulted, loop=loop
    )
