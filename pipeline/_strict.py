"""Strict primitive hooks for cattrs: data is structured exactly as written, never coerced
(``"1"`` is not an ``int``, ``1`` is not a ``bool``).

A module of its own, importing nothing of the pipeline, so that small programs (the scripted
agent starts once per invocation) get the hooks without loading the whole serialization.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

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


def _strict_str(value: Any, type_: Any) -> str:
    if type(value) is not str:
        raise TypeError(f"expected a string, got {value!r}")
    # This hook also receives str subclasses (the StrEnums): build the member, not a plain str.
    if type_ is not str and isinstance(type_, type) and issubclass(type_, str):
        member: str = type_(value)
        return member
    return value


def _strict_datetime(value: Any, _type: Any) -> datetime:
    if type(value) is not str:
        raise TypeError(f"expected an ISO 8601 time, got {value!r}")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError(f"expected a time with a UTC offset, got {value!r}")
    return parsed


def configure_primitives(converter: Converter) -> None:
    """Make primitive structuring strict (no coercion of stored or received data)."""
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(datetime, _strict_datetime)
