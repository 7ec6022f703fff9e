"""The one cattrs converter for events, effects and state, configured once (pure).

Built from ``cattrs.preconf.orjson`` with ``forbid_extra_keys``; events and effects are tagged
unions with a stable ``type`` discriminator taken from ``WIRE_TAGS`` / ``EFFECT_TAGS``. Primitive
hooks are strict: stored data is structured exactly as written, never coerced (``"1"`` is not
an ``int``, ``1`` is not a ``bool``).
"""

from __future__ import annotations

from typing import Any

import orjson
from cattrs import Converter
from cattrs.preconf.orjson import make_converter as make_orjson_converter
from cattrs.strategies import configure_tagged_union

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


def configure_unions(converter: Converter) -> None:
    """Tag ``PipelineEvent`` and ``Effect`` with their stable wire tags under ``type``."""
    configure_tagged_union(
        PipelineEvent, converter, tag_generator=WIRE_TAGS.__getitem__, tag_name="type"
    )
    configure_tagged_union(
        Effect, converter, tag_generator=EFFECT_TAGS.__getitem__, tag_name="type"
    )


def make_converter() -> Converter:
    """A new converter configured for every ralph-pipeline type (its errors name every bad
    field and its path)."""
    converter = make_orjson_converter(forbid_extra_keys=True, detailed_validation=True)
    configure_primitives(converter)
    configure_sets(converter)
    configure_json(converter)
    configure_unions(converter)
    return converter
