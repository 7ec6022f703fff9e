"""The validators of the value types events, effects and state are made of (pure): the
bounds a count, an ordinal, an amount, a time, a file mode and an exit status must keep."""

from __future__ import annotations

import math
from typing import Any

from attrs import Attribute

__all__ = [
    "COUNT_VALIDATOR",
    "EXIT_CODE_VALIDATOR",
    "FILE_MODE_VALIDATOR",
    "INSTANT_VALIDATOR",
    "MAX_COUNT",
    "MAX_EXIT_CODE",
    "MAX_FILE_MODE",
    "MIN_EXIT_CODE",
    "OPTIONAL_COUNT_VALIDATOR",
    "ORDINAL_VALIDATOR",
    "USD_VALIDATOR",
]

MAX_COUNT = 2**53
"""The largest count the wire format promises to keep exact."""


def _check_count(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if not 0 <= value <= MAX_COUNT:
        raise ValueError(f"{attribute.name} must be from 0 to 2**53, got {value!r}")


def _check_ordinal(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if not 1 <= value <= MAX_COUNT:
        raise ValueError(f"{attribute.name} must be from 1 to 2**53, got {value!r}")


def _check_usd(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if value is not None and not (math.isfinite(value) and 0 <= value <= 1e12):
        raise ValueError(f"{attribute.name} must be a finite amount from 0, got {value!r}")


USD_VALIDATOR = _check_usd
"""Validator for :data:`Usd` fields (and optional ones: None passes)."""


"""Validator for :data:`Usd` fields (and optional ones: None passes)."""

_count = _check_count
_ordinal = _check_ordinal


def _optional_count(instance: object, attribute: Attribute[Any], value: Any) -> None:
    if value is not None:
        _check_count(instance, attribute, value)


OPTIONAL_COUNT_VALIDATOR = _optional_count
"""Validator for optional :data:`Count` and :data:`DurationMs` fields."""


def _aware(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{attribute.name} must be timezone-aware, got {value!r}")


INSTANT_VALIDATOR = _aware
"""Validator for :data:`Instant` fields: a naive datetime would replay differently elsewhere."""

COUNT_VALIDATOR = _count
"""Validator for :data:`Count`, :data:`DurationMs` and :data:`LogPosition` fields."""

ORDINAL_VALIDATOR = _ordinal
"""Validator for :data:`Ordinal` fields."""

MAX_FILE_MODE = 0o7777
"""The largest file mode ``chmod`` takes (permission bits with setuid, setgid and sticky)."""


def _optional_file_mode(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if value is not None and not 0 <= value <= MAX_FILE_MODE:
        raise ValueError(f"{attribute.name} must be a file mode from 0 to 0o7777, got {value!r}")


FILE_MODE_VALIDATOR = _optional_file_mode
"""Validator for file modes (``Count`` fields holding ``chmod`` bits; None passes)."""

MIN_EXIT_CODE = -(2**31)
MAX_EXIT_CODE = 2**32 - 1
"""Exit statuses as any platform reports them (negative: the signal), inside 64 bits."""


def _exit_code(_instance: object, attribute: Attribute[Any], value: Any) -> None:
    if not MIN_EXIT_CODE <= value <= MAX_EXIT_CODE:
        raise ValueError(f"{attribute.name} must be from -2**31 to 2**32-1, got {value!r}")


EXIT_CODE_VALIDATOR = _exit_code
"""Validator for :data:`ExitCode` fields."""
