"""The one cattrs converter for events, effects and state, configured once (pure).

Built from ``cattrs.preconf.orjson`` with ``forbid_extra_keys``; events and effects are tagged
unions with a stable ``type`` discriminator taken from ``WIRE_TAGS`` / ``EFFECT_TAGS``. Primitive
hooks are strict: stored data is structured exactly as written, never coerced (``"1"`` is not
an ``int``, ``1`` is not a ``bool``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, get_args

import orjson
from cattrs import Converter
from cattrs.preconf.orjson import make_converter as make_orjson_converter

from pipeline.core._strict import configure_primitives
from pipeline.core.effects import EFFECT_TAGS, Effect
from pipeline.events import WIRE_TAGS, Json, PipelineEvent

__all__ = ["configure_primitives", "make_converter"]


def _sorted_strings(values: frozenset[str]) -> list[str]:
    return sorted(values)


def configure_sets(converter: Converter) -> None:
    """Encode sets of strings sorted: set order changes between processes (hash seeds), and
    equal states must encode to equal bytes for checkpoints and ``replay --verify``."""
    converter.register_unstructure_hook_func(lambda t: t == frozenset[str], _sorted_strings)


def _json_value(value: Json) -> Any:
    return orjson.loads(value.text)


def _structure_json(value: Any, _type: Any) -> Json:
    # Json.of refuses (ValueError) whatever is not a JSON value; the wire only holds those.
    return Json.of(value)


def configure_json(converter: Converter) -> None:
    """Put a :class:`~pipeline.events.Json` on the wire as the value itself (an object stays
    an object), and read any JSON value back into one."""
    converter.register_unstructure_hook(Json, _json_value)
    converter.register_structure_hook(Json, _structure_json)


class _LazyHooks(dict[Any, Callable[..., Any]]):
    """Hooks made on first use of their key and kept: a lookup of a known key is a plain
    dict lookup; an unknown key raises the ``KeyError`` of ``make``."""

    def __init__(self, make: Callable[[Any], Callable[..., Any]]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: Any) -> Callable[..., Any]:
        hook = self._make(key)
        self[key] = hook
        return hook


def configure_tagged_union(
    union: Any, converter: Converter, tags: Mapping[type, str], tag_name: str = "type"
) -> None:
    """Put ``union``'s members on the wire as cattrs' ``configure_tagged_union`` does (the
    member's fields plus ``tag_name``: its tag), but make each member's hooks the first time
    that member is met. cattrs' strategy generates the code of every member when it is
    configured, which for the events and effects took most of a command's start-up."""
    tag_to_class = {tags[member]: member for member in get_args(union)}

    def structure_member(tag: str) -> Callable[[dict[str, Any]], Any]:
        member = tag_to_class[tag]  # an unknown tag: KeyError(tag), as cattrs raises
        hook = converter.get_structure_hook(member)

        def structure(value: dict[str, Any]) -> Any:
            return hook(value, member)

        return structure

    def unstructure_member(member: type) -> Callable[[Any], dict[str, Any]]:
        hook = converter.get_unstructure_hook(member)
        tag = tags[member]

        def unstructure(value: Any) -> dict[str, Any]:
            data: dict[str, Any] = hook(value)
            data[tag_name] = tag
            return data

        return unstructure

    structure_hooks = _LazyHooks(structure_member)
    unstructure_hooks = _LazyHooks(unstructure_member)

    def structure_tagged(value: dict[str, Any], _type: Any) -> Any:
        value = value.copy()  # forbid_extra_keys: the tag is not a field of the member
        return structure_hooks[value.pop(tag_name)](value)

    def unstructure_tagged(value: Any) -> dict[str, Any]:
        return unstructure_hooks[value.__class__](value)  # type: ignore[no-any-return]

    converter.register_structure_hook(union, structure_tagged)
    converter.register_unstructure_hook(union, unstructure_tagged)


def configure_unions(converter: Converter) -> None:
    """Tag ``PipelineEvent`` and ``Effect`` with their stable wire tags under ``type``; each
    member's hooks are made the first time it is met (see :func:`configure_tagged_union`)."""
    configure_tagged_union(PipelineEvent, converter, WIRE_TAGS)
    configure_tagged_union(Effect, converter, EFFECT_TAGS)


def make_converter() -> Converter:
    """A new converter configured for every ralph-pipeline type (its errors name every bad
    field and its path)."""
    converter = make_orjson_converter(forbid_extra_keys=True, detailed_validation=True)
    configure_primitives(converter)
    configure_sets(converter)
    configure_json(converter)
    configure_unions(converter)
    return converter
