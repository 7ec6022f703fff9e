"""Strict primitive hooks for cattrs: data is structured exactly as written, never coerced
(``"1"`` is not an ``int``, ``1`` is not a ``bool``).

A module of its own, importing nothing of the pipeline, so that small programs (the scripted
agent starts once per invocation) get the hooks without loading the whole serialization.
"""

from __future__ import annotations

import enum
import functools
from datetime import datetime
from typing import Any, NewType

from cattrs import Converter

__all__ = ["configure_primitives"]


def _strict_bool(value: Any, _type: Any) -> bool:
    if type(value) is not bool:
        raise TypeError(f"expected a boolean, got {value!r}")
    return value


def _strict_int(value: Any, _type: Any) -> int:
    if type(value) is not int:
        raise TypeError(f"expected an integer, got {value!r}")
    return value


def _strict_float(value: Any, _type: Any) -> float:
    # A whole number is a number too (TOML's ``3`` for 3.0), but a boolean or text is not.
    if type(value) is not float and type(value) is not int:
        raise TypeError(f"expected a number, got {value!r}")
    return float(value)


def _strict_str(value: Any, _type: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {value!r}")
    return value


def _strict_datetime(value: Any, _type: Any) -> datetime:
    if type(value) is not str:
        raise TypeError(f"expected an ISO 8601 time, got {value!r}")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"expected a time with a UTC offset, got {value!r}")
    return parsed


_STRICT_HOOKS: dict[type, Any] = {
    bool: _strict_bool,
    int: _strict_int,
    float: _strict_float,
    str: _strict_str,
    datetime: _strict_datetime,
}


def _primitive_newtype(type_: Any) -> bool:
    return isinstance(type_, NewType) and type_.__supertype__ in _STRICT_HOOKS


def _newtype_hook(type_: Any) -> Any:
    return _STRICT_HOOKS[type_.__supertype__]


@functools.cache
def _members(type_: type[enum.StrEnum]) -> dict[str, enum.StrEnum]:
    return {member.value: member for member in type_}


def _strict_enum(value: Any, type_: type[enum.StrEnum]) -> enum.StrEnum:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {value!r}")
    # A lookup of the values: calling the class costs several times that, on every event.
    member = _members(type_).get(value)
    if member is None:
        raise ValueError(f"{value!r} is not a valid {type_.__name__}")
    return member


def configure_primitives(converter: Converter) -> None:
    """Make primitive structuring strict (no coercion of stored or received data)."""
    for type_, hook in _STRICT_HOOKS.items():
        converter.register_structure_hook(type_, hook)
    # A NewType over a primitive (an id, a count, a time) goes straight to the primitive's
    # hook: cattrs would wrap it in one more call per field, on every event decoded.
    converter.register_structure_hook_factory(_primitive_newtype, _newtype_hook)
    converter.register_structure_hook(enum.StrEnum, _strict_enum)
