"""Encoding events, effects and state to JSON and back, with clear errors (pure).

One converter does it all. Its hooks are fetched once and orjson is called directly; a
decoding error names every bad field and its path. The unions' hooks make each member's code
the first time that member is met, and the state's are fetched on first use, so importing
this module generates no code (a command that reads three kinds of event pays for three).
"""

from __future__ import annotations

import functools
from typing import Any, Final, TypeVar

import orjson
from cattrs import transform_error
from cattrs.errors import BaseValidationError
from cattrs.v import format_exception

from pipeline import WireFormatError
from pipeline.core.effects import Effect
from pipeline.core.serialization._converter import make_converter
from pipeline.core.state import PipelineState
from pipeline.events import RETIRED_TAGS, PipelineEvent

__all__ = [
    "CONVERTER",
    "decode_effect",
    "decode_event",
    "decode_state",
    "encode_effect",
    "encode_event",
    "encode_state",
    "structure",
    "unstructure_event",
]

CONVERTER: Final = make_converter()
"""The shared converter. Unstructure events with ``unstructure_as=PipelineEvent``."""

_unstructure_event = CONVERTER.get_unstructure_hook(PipelineEvent)
_structure_event = CONVERTER.get_structure_hook(PipelineEvent)
_unstructure_effect = CONVERTER.get_unstructure_hook(Effect)
_structure_effect = CONVERTER.get_structure_hook(Effect)


@functools.cache
def _state_hooks() -> tuple[Any, Any]:
    """The state's unstructure and structure hooks, made on first use (its fields reach
    most of the state's records: making them costs what a command that never touches a
    state should not pay)."""
    return CONVERTER.get_unstructure_hook(PipelineState), CONVERTER.get_structure_hook(
        PipelineState
    )


T = TypeVar("T")


def unstructure_event(event: PipelineEvent) -> dict[str, Any]:
    """The event as plain JSON-ready data, with its ``type`` tag."""
    data: dict[str, Any] = _unstructure_event(event)
    return data


def encode_event(event: PipelineEvent) -> bytes:
    """The event as JSON bytes, with its ``type`` tag."""
    return orjson.dumps(_unstructure_event(event))


def encode_effect(effect: Effect) -> bytes:
    """The effect as JSON bytes, with its ``type`` tag."""
    return orjson.dumps(_unstructure_effect(effect))


def encode_state(state: PipelineState) -> bytes:
    """The state as JSON bytes (dict keys sorted, so equal states encode equally)."""
    return orjson.dumps(_state_hooks()[0](state), option=orjson.OPT_SORT_KEYS)


def structure(data: Any, cls: type[T], what: str) -> T:
    """Structure plain ``data`` as ``cls``; a mismatch raises :class:`WireFormatError`
    naming ``what`` and the path of every bad field."""
    try:
        return CONVERTER.structure(data, cls)
    except BaseValidationError as error:
        raise WireFormatError(_describe(what, error)) from error
    except (KeyError, TypeError, ValueError) as error:
        raise WireFormatError(f"{what}: {error}") from error


def _format(error: BaseException, type_: Any) -> str:
    """One problem, worded for people: keeps validator messages that cattrs would drop."""
    if isinstance(error, KeyError) and len(error.args) == 1 and isinstance(error.args[0], str):
        if type_ is None:
            return _unknown_tag(error.args[0])
        return "required field missing"
    if isinstance(error, (TypeError, ValueError)) and str(error):
        return str(error)
    return format_exception(error, type_)


def _unknown_tag(tag: object) -> str:
    if tag in RETIRED_TAGS:
        return f"retired type tag {tag!r} (an event no release writes any more)"
    return f"unknown type tag {tag!r}"


def _describe(what: str, error: BaseValidationError) -> str:
    return "; ".join(transform_error(error, path=what, format_exception=_format))


def _loads(data: bytes | str, what: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise WireFormatError(f"{what} is not valid JSON: {error}") from error


def _structured(hook: Any, data: Any, what: str) -> Any:
    if not isinstance(data, dict):
        raise WireFormatError(f"{what}: expected a JSON object, got {type(data).__name__}")
    try:
        return hook(data, object)
    except BaseValidationError as error:
        raise WireFormatError(_describe(what, error)) from error
    except KeyError as error:
        raise WireFormatError(f"{what}: {_unknown_tag(error.args[0])}") from error
    except (TypeError, ValueError, AttributeError) as error:
        raise WireFormatError(f"{what}: {error}") from error


def decode_event(data: bytes | str, what: str = "event") -> PipelineEvent:
    """The event encoded in ``data``; bad data raises :class:`WireFormatError`."""
    result: PipelineEvent = _structured(_structure_event, _loads(data, what), what)
    return result


def decode_effect(data: bytes | str, what: str = "effect") -> Effect:
    """The effect encoded in ``data``; bad data raises :class:`WireFormatError`."""
    result: Effect = _structured(_structure_effect, _loads(data, what), what)
    return result


def decode_state(data: bytes | str, what: str = "state") -> PipelineState:
    """The state encoded in ``data``; bad data raises :class:`WireFormatError`."""
    result: PipelineState = _structured(_state_hooks()[1], _loads(data, what), what)
    return result
