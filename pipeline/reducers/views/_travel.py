"""Time travel over a run's log: the folded state at any point, and what changed between two
points, field by field (pure). The reducer does it; nothing is stored twice."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, final

import attrs
from attrs import frozen

from pipeline.core.state import PipelineState
from pipeline.events import PipelineEvent
from pipeline.reducers import reduce

__all__ = ["Change", "state_at", "state_changes", "states_at"]


@final
@frozen(kw_only=True)
class Change:
    """State field ``path`` (dotted, as the state names it: ``progress.phase``; a map's key
    quoted: ``ledger.spend.by_role["planner"]``) went from ``before`` to ``after`` (the values
    themselves; None also for a key that was absent)."""

    path: str
    before: Any
    after: Any


def state_at(events: Iterable[PipelineEvent], sequence: int) -> PipelineState:
    """The state after the first ``sequence`` events of ``events`` (all of them when fewer)."""
    (state,) = states_at(events, (sequence,))
    return state


def states_at(events: Iterable[PipelineEvent], sequences: Iterable[int]) -> list[PipelineState]:
    """The states after the first ``n`` events for each ``n`` of ``sequences``, in their
    order, folding the log once."""
    found: dict[int, PipelineState] = {}
    state, folded = PipelineState(), 0
    remaining = iter(events)
    for target in sorted(set(sequences)):
        while folded < target and (event := next(remaining, None)) is not None:
            state = reduce(state, event)
            folded += 1
        found[target] = state
    return [found[n] for n in sequences]


def state_changes(before: PipelineState, after: PipelineState) -> list[Change]:
    """Every leaf of the state that differs between ``before`` and ``after``, in field
    order (a list that changed is one change: its whole value)."""
    return list(_diff("", before, after))


def _diff(path: str, old: Any, new: Any) -> Iterator[Change]:
    if old is new or old == new:
        return
    if attrs.has(type(old)) and type(old) is type(new):
        for field in attrs.fields(type(old)):
            inner = f"{path}.{field.name}" if path else field.name
            yield from _diff(inner, getattr(old, field.name), getattr(new, field.name))
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in dict.fromkeys([*old, *new]):
            # A key is the agents' or a model's name, which may hold a dot: quoted.
            name = json.dumps(str(getattr(key, "value", key)), ensure_ascii=False)
            yield from _diff(f"{path}[{name}]", old.get(key), new.get(key))
        return
    yield Change(path=path, before=old, after=new)
