"""Judging an agent's structured response against its JSON Schema.

The handler that reads an agent's ``response.json`` judges it here and records the verdict in
its ``ResponseSubmitted`` fact, so a replay reads the verdict instead of running a validator
(whose messages may change between releases of the library). :func:`classify` says what the
text is: ``VALID`` with the parsed value, ``INVALID_JSON`` (not parseable as one JSON value) or
``SCHEMA_VIOLATION`` (parseable, but the schema refuses it) with every violation, each with the
JSON pointer of the offending place and the validator's message. It never raises on any text,
and violations come sorted, so one release judges one text alike every time.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, final

import orjson
from attrs import frozen

from pipeline import PipelineError
from pipeline.events import Instant, Json, ResponseStatus, ResponseSubmitted, Role

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import ValidationError

__all__ = [
    "InvalidSchemaError",
    "ResponseStatus",
    "ResponseVerdict",
    "Violation",
    "check_schema",
    "classify",
    "judged",
]


@final
@frozen(kw_only=True)
class Violation:
    """One way a response breaks its schema: where (a JSON pointer) and what."""

    pointer: str
    message: str

    def __str__(self) -> str:
        return f"{self.pointer or '/'}: {self.message}"


@final
@frozen(kw_only=True)
class ResponseVerdict:
    """The classification of one raw response."""

    status: ResponseStatus
    value: Json | None
    """The parsed response when it is valid JSON (even when the schema refuses it)."""
    violations: tuple[Violation, ...]
    error: str | None = None
    """Why the text is not JSON (``INVALID_JSON`` only)."""

    @property
    def problems(self) -> tuple[str, ...]:
        """What is wrong, one line each: ``pointer: message`` per violation, or why the text
        is no JSON; none for a valid response."""
        if self.status is ResponseStatus.INVALID_JSON:
            return (f"not one JSON value ({self.error})",)
        return tuple(str(v) for v in self.violations)


class InvalidSchemaError(PipelineError, ValueError):
    """A response schema is not a valid JSON Schema (draft 2020-12)."""


def check_schema(schema: Json) -> None:
    """Raise :class:`InvalidSchemaError` unless ``schema`` is a valid draft 2020-12 schema."""
    value = schema.value
    if not isinstance(value, dict | bool):
        raise InvalidSchemaError("not a valid JSON Schema: a schema is an object (or a boolean)")
    # jsonschema is imported when a schema is first checked or a response judged: every
    # command that opens a store imports this module, and most never validate anything.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as error:
        where = _pointer(error.path)
        raise InvalidSchemaError(f"not a valid JSON Schema at {where}: {error.message}") from None


@lru_cache(maxsize=64)
def _validator(schema_text: str) -> Draft202012Validator:
    # Built once per schema: compiling a validator costs far more than one validation.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(orjson.loads(schema_text))


def _pointer(path: Any) -> str:
    """The JSON pointer (RFC 6901) of a path of keys and indices."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _message(error: ValidationError) -> str:
    message: str = error.message
    return message


def classify(raw: str, schema: Json) -> ResponseVerdict:
    """Classify ``raw`` (the agent's whole answer) against ``schema``; never raises."""
    try:
        value = orjson.loads(raw)
        parsed = Json.of(value)
    except (orjson.JSONDecodeError, ValueError) as error:
        why = "empty" if not raw.strip() else str(error)
        return ResponseVerdict(
            status=ResponseStatus.INVALID_JSON,
            value=None,
            violations=(),
            error=f"invalid JSON: {why}",
        )
    try:
        errors = list(_validator(schema.text).iter_errors(value))
    except RecursionError:
        # A recursive schema over a deeply nested value: refuse it rather than crash.
        too_deep = Violation(pointer="", message="nested too deeply to validate")
        return ResponseVerdict(
            status=ResponseStatus.SCHEMA_VIOLATION, value=parsed, violations=(too_deep,)
        )
    violations = sorted(
        {Violation(pointer=_pointer(e.absolute_path), message=_message(e)) for e in errors},
        key=lambda v: (v.pointer, v.message),
    )
    if violations:
        return ResponseVerdict(
            status=ResponseStatus.SCHEMA_VIOLATION, value=parsed, violations=tuple(violations)
        )
    return ResponseVerdict(status=ResponseStatus.VALID, value=parsed, violations=())


def judged(role: Role, raw: str, schema: Json, at: Instant) -> ResponseSubmitted:
    """The fact that the agent in ``role`` answered ``raw``, with its verdict against
    ``schema``: what the reducer acts on and what a replay reads back."""
    verdict = classify(raw, schema)
    return ResponseSubmitted(
        role=role, raw_response=raw, status=verdict.status, problems=verdict.problems, at=at
    )
