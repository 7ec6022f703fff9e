"""Any JSON value as an immutable, hashable value type for events (pure)."""

from __future__ import annotations

import math
from typing import Any, TypeAlias, final

import orjson
from attrs import Attribute, field, frozen

__all__ = ["Json", "JsonValue"]

JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
"""A JSON value as Python builds it: objects are dicts, arrays are lists."""


def _finite(value: object) -> bool:
    """Whether no float inside ``value`` is NaN or infinite (orjson would write them as null)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(item) for item in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(item) for item in value)
    return True


def _canonical(value: object) -> str:
    """``value`` as canonical JSON text: compact, keys sorted, no NaN or infinity."""
    if not _finite(value):
        raise ValueError("not representable as JSON: NaN and infinity are not JSON numbers")
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError as error:  # orjson's JSONEncodeError is a TypeError
        raise ValueError(f"not representable as JSON: {error}") from error


def _check_canonical(_instance: object, attribute: Attribute[Any], value: str) -> None:
    try:
        canonical = _canonical(orjson.loads(value))
    except (orjson.JSONDecodeError, ValueError) as error:
        raise ValueError(f"{attribute.name} must be JSON text: {error}") from error
    if canonical != value:
        raise ValueError(f"{attribute.name} must be canonical JSON ({canonical!r}), got {value!r}")


@final
@frozen
class Json:
    """Any JSON value, immutable and hashable, kept as its canonical text.

    Agents publish payloads of any JSON type; a dict would make the frozen event holding it
    unhashable and mutable, so the event holds this instead. On the wire it is the value itself
    (an object stays an object). Build one with :meth:`of`; read it with :attr:`value`.
    """

    text: str = field(validator=_check_canonical)
    """Compact JSON with sorted keys: equal values have equal text."""

    @classmethod
    def of(cls, value: object) -> Json:
        """The ``Json`` of a value built from dicts, lists, str, int, float, bool and None.

        Raises ``ValueError`` for anything else (a set, NaN, an int beyond 64 bits)."""
        return cls(_canonical(value))

    @property
    def value(self) -> JsonValue:
        """A fresh Python copy of the value (changing it changes nothing here)."""
        parsed: JsonValue = orjson.loads(self.text)
        return parsed
