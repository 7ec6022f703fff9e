"""Describe the event vocabulary as plain data and compare it with a recorded snapshot.

The snapshot pins, for every category, its member classes, and for every class its wire tag and
its fields with their types. Any difference is reported with instructions for changing the
vocabulary on purpose.
"""

from __future__ import annotations

import enum
import re
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pipeline.events import error as error_events
from pipeline.events import hook_policy, members, notes, policy, screen, values

HOW_TO_EXTEND = (
    "The event vocabulary is frozen. If this change is on purpose, follow "
    "docs/architecture/extending-events.md: add the class to its category union and to "
    "WIRE_TAGS, handle it in the category reducer (mypy proves the match exhaustive), then "
    "re-record the snapshot with RALPH_UPDATE_SNAPSHOTS=1 and commit all of it together. "
    "Never rename or reuse a wire tag; a changed field needs a new schema version and an upcaster."
)


def type_name(hint: Any) -> str:
    """A stable spelling of a field's type: module paths dropped, NewType names kept."""
    text = repr(hint) if not isinstance(hint, type) else hint.__name__
    text = text.replace("typing.", "")
    return re.sub(r"\b(?:[a-z_][\w]*\.)+([A-Za-z_]\w*)", r"\1", text)


def describe(
    categories: Mapping[str, Any], tags: Mapping[type, str], retired: Iterable[str] = ()
) -> dict[str, Any]:
    """The vocabulary as data: ``{"categories": {name: [class]}, "events": {class: {...}},
    "values": {...}, "retired": [tag]}``."""
    described_categories: dict[str, list[str]] = {}
    described_events: dict[str, Any] = {}
    for category, alias in categories.items():
        classes = members(alias)
        described_categories[category] = [cls.__name__ for cls in classes]
        for cls in classes:
            hints = typing.get_type_hints(cls)
            described_events[cls.__name__] = {
                "tag": tags.get(cls),
                "fields": {f.name: type_name(hints[f.name]) for f in attrs.fields(cls)},
            }
    return {
        "categories": described_categories,
        "events": described_events,
        "values": describe_values(),
        "retired": sorted(retired),
    }


def describe_values() -> dict[str, Any]:
    """The value types events are made of: enum values and the fields of value classes."""
    described: dict[str, Any] = {}
    module_items = {
        **vars(values),
        **vars(policy),
        **vars(screen),
        **vars(notes),
        **vars(hook_policy),
    }.items()
    for name, obj in sorted(module_items, key=lambda item: item[0]):
        if (
            isinstance(obj, type)
            and issubclass(obj, enum.Enum)
            and obj.__module__
            in {values.__name__, screen.__name__, notes.__name__, hook_policy.__name__}
        ):
            described[name] = [member.value for member in obj]
        elif attrs.has(obj):
            hints = typing.get_type_hints(obj)
            described[name] = {f.name: type_name(hints[f.name]) for f in attrs.fields(obj)}
    for name, obj in sorted(vars(error_events).items()):
        if isinstance(obj, type) and issubclass(obj, enum.Enum):
            described[name] = [member.value for member in obj]
    return described


def _retirement_problems(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """A removed event's tag must be retired, and a retired tag stays retired and unused."""
    problems: list[str] = []
    old_retired, new_retired = set(recorded.get("retired", ())), set(current["retired"])
    for tag in sorted(old_retired - new_retired):
        problems.append(f"the retired wire tag {tag!r} is no longer reserved")
    live = {event["tag"] for event in current["events"].values()}
    for tag in sorted(new_retired & live):
        problems.append(f"the retired wire tag {tag!r} was given to an event again")
    for name in sorted(set(recorded["events"]) - set(current["events"])):
        tag = recorded["events"][name]["tag"]
        if tag not in new_retired and tag not in live:
            problems.append(f"{name} was removed without retiring its wire tag {tag!r}")
    for tag in sorted(new_retired - old_retired):
        problems.append(f"the wire tag {tag!r} was retired")
    return problems


def differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Every way ``current`` differs from ``recorded``, one line each."""
    problems: list[str] = []
    old_categories, new_categories = recorded["categories"], current["categories"]
    for name in sorted(set(old_categories) | set(new_categories)):
        old, new = set(old_categories.get(name, ())), set(new_categories.get(name, ()))
        for added in sorted(new - old):
            problems.append(f"category {name!r} gained the variant {added}")
        for removed in sorted(old - new):
            problems.append(f"category {name!r} lost the variant {removed}")
    old_events, new_events = recorded["events"], current["events"]
    for name in sorted(set(old_events) & set(new_events)):
        old, new = old_events[name], new_events[name]
        if old["tag"] != new["tag"]:
            problems.append(f"{name}'s wire tag changed from {old['tag']!r} to {new['tag']!r}")
        for field in sorted(set(old["fields"]) | set(new["fields"])):
            before, after = old["fields"].get(field), new["fields"].get(field)
            if before is None:
                problems.append(f"{name} gained the field {field}: {after}")
            elif after is None:
                problems.append(f"{name} lost the field {field}: {before}")
            elif before != after:
                problems.append(f"{name}.{field} changed type from {before} to {after}")
    problems.extend(_retirement_problems(recorded, current))
    old_values, new_values = recorded.get("values", {}), current.get("values", {})
    for name in sorted(set(old_values) | set(new_values)):
        before, after = old_values.get(name), new_values.get(name)
        if before != after:
            problems.append(f"value type {name} changed from {before} to {after}")
    return problems
