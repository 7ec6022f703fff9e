"""The event vocabulary is frozen: membership, fields, types and wire tags match the snapshot."""

from __future__ import annotations

import inspect
import json
import os
import pkgutil
from pathlib import Path
from typing import Any, final

import attrs
import pytest

import pipeline.events
from pipeline.events import (
    CATEGORIES,
    RETIRED_TAGS,
    WIRE_TAGS,
    InvocationFailed,
    PipelineEvent,
    members,
)
from tests.events.vocabulary import HOW_TO_EXTEND, describe, differences

SNAPSHOT = Path(__file__).with_name("vocabulary.snapshot.json")


def _current() -> dict[str, Any]:
    return describe(CATEGORIES, WIRE_TAGS, RETIRED_TAGS)


def _recorded() -> dict[str, Any]:
    if os.environ.get("RALPH_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(_current(), indent=2, sort_keys=True) + "\n")
    data: dict[str, Any] = json.loads(SNAPSHOT.read_text())
    return data


def _event_classes_defined() -> set[type]:
    """Every attrs class defined in an event module (the unions must hold each of them)."""
    found: set[type] = set()
    for info in pkgutil.iter_modules(pipeline.events.__path__):
        policy_data = {
            "values",
            "policy",
            "screen",
            "limit_policy",
            "escalation",
            "notes",
            "hook_policy",
        }
        if info.name in policy_data | {"wire", "_json"}:
            continue
        module = __import__(f"pipeline.events.{info.name}", fromlist=["_"])
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and attrs.has(obj):
                found.add(obj)
    return found


def test_vocabulary_matches_the_snapshot() -> None:
    """Categories, members, fields with their types and wire tags are exactly as recorded."""
    problems = differences(_recorded(), _current())
    assert not problems, "\n".join([*problems, HOW_TO_EXTEND])


def test_every_event_class_defined_is_in_the_union() -> None:
    """No event class is defined and forgotten: each belongs to a category of PipelineEvent."""
    assert _event_classes_defined() == set(members(PipelineEvent))


def test_categories_partition_the_union() -> None:
    """Each event is in exactly one category, and the categories together are PipelineEvent."""
    listed = [cls for alias in CATEGORIES.values() for cls in members(alias)]
    assert len(listed) == len(set(listed))
    assert set(listed) == set(members(PipelineEvent))


def test_wire_tags_are_unique_and_cover_every_event() -> None:
    """Every event has a tag, no two events share one, and each tag names its category."""
    assert set(WIRE_TAGS) == set(members(PipelineEvent))
    assert len(set(WIRE_TAGS.values())) == len(WIRE_TAGS)
    for category, alias in CATEGORIES.items():
        for cls in members(alias):
            assert WIRE_TAGS[cls].startswith(f"{category}.")


@pytest.mark.parametrize("cls", members(PipelineEvent), ids=lambda c: c.__name__)
def test_every_event_is_frozen_slotted_and_final(cls: type) -> None:
    """Events are immutable facts: frozen, slotted, marked final, with no event base class."""
    assert attrs.has(cls)
    assert "__slots__" in cls.__dict__
    assert getattr(cls, "__final__", False) is True
    assert cls.__mro__[1] is object
    instance_fields = attrs.fields(cls)
    assert instance_fields, f"{cls.__name__} records nothing"
    assert instance_fields[-1].name == "at", f"{cls.__name__} must carry the time it happened"


def test_an_added_variant_is_rejected_with_instructions() -> None:
    """The snapshot check bites: a category with one more variant is reported, with how-to."""

    @final
    @attrs.frozen
    class InvocationCancelled:
        reason: str

    categories = {**CATEGORIES, "agent": CATEGORIES["agent"] | InvocationCancelled}
    tags = {**WIRE_TAGS, InvocationCancelled: "agent.invocation_cancelled"}
    problems = differences(_recorded(), describe(categories, tags, RETIRED_TAGS))
    assert problems == ["category 'agent' gained the variant InvocationCancelled"]
    assert "extending-events.md" in HOW_TO_EXTEND


def test_a_renamed_field_is_rejected() -> None:
    """The snapshot check bites: renaming a field shows as one field lost and one gained."""
    recorded = _recorded()
    renamed = json.loads(json.dumps(_current()))
    fields = renamed["events"]["InvocationFailed"]["fields"]
    fields["retryable"] = fields.pop("retriable")
    assert differences(recorded, renamed) == [
        "InvocationFailed lost the field retriable: bool",
        "InvocationFailed gained the field retryable: bool",
    ]


def test_a_changed_field_type_or_tag_is_rejected() -> None:
    """The snapshot check bites: a field's new type and a new wire tag are both reported."""
    changed = json.loads(json.dumps(_current()))
    changed["events"]["InvocationFailed"]["fields"]["retriable"] = "int"
    changed["events"]["InvocationFailed"]["tag"] = "agent.failed"
    assert differences(_recorded(), changed) == [
        "InvocationFailed's wire tag changed from 'agent.invocation_failed' to 'agent.failed'",
        "InvocationFailed.retriable changed type from bool to int",
    ]


def test_a_changed_enum_value_is_rejected() -> None:
    """The snapshot check bites on value types too: enum values are part of the wire contract."""
    changed = json.loads(json.dumps(_current()))
    changed["values"]["Role"] = [*changed["values"]["Role"], "tester"]
    assert differences(_recorded(), changed) == [
        "value type Role changed from ['planner', 'developer', 'reviewer', 'committer', 'fixer'] "
        "to ['planner', 'developer', 'reviewer', 'committer', 'fixer', 'tester']"
    ]


def test_a_removed_variant_is_rejected() -> None:
    """The snapshot check bites: a category that lost a variant is reported."""
    without = {**CATEGORIES, "agent": _union_without(CATEGORIES["agent"], InvocationFailed)}
    problems = differences(_recorded(), describe(without, WIRE_TAGS, RETIRED_TAGS))
    assert problems == [
        "category 'agent' lost the variant InvocationFailed",
        "InvocationFailed was removed without retiring its wire tag 'agent.invocation_failed'",
    ]


def test_a_retired_tag_stays_reserved() -> None:
    """Retiring a removed event's tag is reported as such; a retired tag that is given to an
    event again, or dropped from the reserve, is rejected."""
    without = {**CATEGORIES, "agent": _union_without(CATEGORIES["agent"], InvocationFailed)}
    retired = {*RETIRED_TAGS, "agent.invocation_failed"}
    problems = differences(_recorded(), describe(without, WIRE_TAGS, retired))
    assert problems == [
        "category 'agent' lost the variant InvocationFailed",
        "the wire tag 'agent.invocation_failed' was retired",
    ]
    reused = {**WIRE_TAGS, InvocationFailed: "misc.context_cleaned"}
    problems = differences(_recorded(), describe(CATEGORIES, reused, RETIRED_TAGS))
    assert "the retired wire tag 'misc.context_cleaned' was given to an event again" in problems
    dropped = RETIRED_TAGS - {"misc.context_cleaned"}
    problems = differences(_recorded(), describe(CATEGORIES, WIRE_TAGS, dropped))
    assert problems == ["the retired wire tag 'misc.context_cleaned' is no longer reserved"]


def _union_without(alias: Any, removed: type) -> Any:
    kept = [cls for cls in members(alias) if cls is not removed]
    union = kept[0]
    for cls in kept[1:]:
        union = union | cls
    return union
